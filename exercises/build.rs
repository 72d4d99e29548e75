//! The exercise tests link libtorch like the course's own binaries do: with an
//! rpath, and with libtorch.so kept so that CUDA is found (see ../build.rs).
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
