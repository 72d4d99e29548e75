//! Every program and test of this package loads libtorch on its own: an rpath to
//! libtorch's folder, and libtorch.so kept so that CUDA is found (tch's build
//! leaves both out; ../workbench/build.rs says more).
fn main() {
    let lib = std::env::var("DEP_TCH_LIBTORCH_LIB")
        .expect("DEP_TCH_LIBTORCH_LIB is not set: did scripts/setup.sh run?");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
}
