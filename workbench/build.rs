//! Compiles the C++ shim, and makes this crate's own tests load libtorch on
//! their own (chapters/build.rs does the same for the programs and tests/).
//!
//! tch's own build links libtorch but leaves two gaps that bite newcomers:
//! * no RUNPATH, so a binary fails with "libtorch_cpu.so: cannot open shared object
//!   file" unless LD_LIBRARY_PATH is set;
//! * with the linker's default `--as-needed`, `libtorch.so` (the library that pulls in
//!   `libtorch_cuda.so`) is dropped because no symbol is used from it directly, and
//!   CUDA is then never seen even on a GPU machine.
//!
//! The shim, `src/ffi/shim.cpp`, holds the few libtorch calls tch does not expose
//! (bf16 autocast, the TF32 switch, the CUDA allocator's peak-memory statistics),
//! and says clearly when the libtorch it finds is not the one the course is pinned to.
use std::env;
use std::path::{Path, PathBuf};

/// The libtorch release that tch 0.24 and the shim are written against.
const EXPECTED: &str = "2.11";

fn main() {
    // torch-sys declares `links = "tch"` and prints `cargo:libtorch_lib=...`; cargo hands
    // that to direct dependents as DEP_TCH_LIBTORCH_LIB.
    let lib = PathBuf::from(env::var("DEP_TCH_LIBTORCH_LIB").expect(
        "DEP_TCH_LIBTORCH_LIB is not set: torch-sys must be a direct dependency. \
         Did scripts/setup.sh run?",
    ));
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    // --as-needed is GNU ld's; other platforms' linkers refuse the flag.
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
    // Tests and tools find the libtorch folder through this at compile time.
    println!("cargo:rustc-env=COURSE_LIBTORCH_LIB={}", lib.display());

    let root = lib.parent().expect("libtorch lib dir has a parent");
    // Which libtorch this was built against, for the headers of every output.
    // A standalone libtorch has build-version; the PyPI wheel has version.py.
    let version = std::fs::read_to_string(root.join("build-version"))
        .ok()
        .or_else(|| {
            let py = std::fs::read_to_string(root.join("version.py")).ok()?;
            let line = py.lines().find(|l| l.starts_with("__version__"))?;
            Some(line.split('\'').nth(1)?.to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    let version = version.trim();
    check_version(version, root);
    println!("cargo:rustc-env=COURSE_LIBTORCH_VERSION={version}");
    println!("cargo:rerun-if-changed=src/ffi/shim.cpp");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("src/ffi/shim.cpp")
        .include(root.join("include"))
        .include(root.join("include/torch/csrc/api/include"))
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .warnings(false)
        .compile("course_shim");
}

/// Stops the build when the libtorch found is not 2.11.x: the shim calls
/// libtorch's C++ API directly, so another release fails later with a wall of
/// compiler or linker errors, or at run time. With tch's own escape hatch,
/// LIBTORCH_BYPASS_VERSION_CHECK, set, it only warns.
fn check_version(version: &str, root: &Path) {
    println!("cargo:rerun-if-env-changed=LIBTORCH_BYPASS_VERSION_CHECK");
    if version == "unknown" {
        println!(
            "cargo:warning=cannot tell which libtorch {} is (no build-version or \
             version.py next to it); the course expects {EXPECTED}.x",
            root.display()
        );
        return;
    }
    let release = version.split('+').next().unwrap_or(version);
    if release == EXPECTED || release.starts_with(&format!("{EXPECTED}.")) {
        return;
    }
    let message = format!(
        "found libtorch {version} in {}, but this course needs libtorch \
         {EXPECTED}.x (PyPI's torch=={EXPECTED}.0): run scripts/setup.sh, or point \
         LIBTORCH at a {EXPECTED} install",
        root.display()
    );
    if env::var_os("LIBTORCH_BYPASS_VERSION_CHECK").is_some() {
        println!("cargo:warning={message} (going on: LIBTORCH_BYPASS_VERSION_CHECK is set)");
    } else {
        // A build script's panic shows its message in cargo's error output.
        panic!("{message}");
    }
}
