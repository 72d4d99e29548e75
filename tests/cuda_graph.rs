//! `--cuda-graph`: refused where it cannot run; on a CUDA machine, replays that
//! draw fresh dropout masks and follow the eager steps.
use std::path::Path;

use tch::Device;
use transformer_course::data::make_dataset;
use transformer_course::train::TrainOptions;
use workbench::engine::{self, EngineOptions};
use workbench::graph::{check_supported, dropout_masks_differ, Unsupported};
use workbench::optim::AdamKind;
use workbench::precision::Precision;
use workbench::sys::{self, cuda_graphs_available};

fn graphed() -> EngineOptions {
    EngineOptions {
        cuda_graph: true,
        ..EngineOptions::default()
    }
}

mod common;

#[test]
fn a_graphed_trainer_is_refused_on_the_cpu_in_one_line() {
    let _rng = common::global_rng();
    let opts = TrainOptions::default();
    let config = common::tiny_config();
    let err = engine::learner(config, Device::Cpu, &opts, &graphed())
        .err()
        .expect("a CPU trainer with a CUDA graph");
    assert_eq!(format!("{err:#}"), "a CUDA graph needs a CUDA device");
}

#[test]
fn a_graph_needs_the_fused_optimizer() {
    // Checked before anything touches a GPU, so this runs anywhere.
    let err = check_supported(Device::Cuda(0), AdamKind::Tch).unwrap_err();
    assert_eq!(err, Unsupported::NeedsFusedAdam);
    assert!(err.to_string().contains("fused Adam"), "{err}");
    assert!(!err.to_string().contains('\n'));
}

/// The shim finds `at::cuda::CUDAGraph` at run time, in libtorch_cuda.so:
/// present in a CUDA build of libtorch (the PyPI wheel on Linux), absent in a
/// CPU-only one, which must say so instead of crashing.
#[test]
fn graph_functions_resolve_exactly_when_libtorch_has_cuda() {
    // The libtorch built against, or the one LD_LIBRARY_PATH puts first, as
    // scripts/gpu-fast-path.sh does for test binaries built on another machine.
    let search = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let has_cuda = std::env::split_paths(&search)
        .chain([Path::new(sys::LIBTORCH_LIB).to_path_buf()])
        .any(|dir| dir.join("libtorch_cuda.so").exists());
    match cuda_graphs_available() {
        Ok(()) => assert!(has_cuda, "resolved without libtorch_cuda.so"),
        Err(e) => {
            assert!(!has_cuda, "libtorch_cuda.so is there, yet: {e}");
            assert!(e.to_string().contains("no CUDA graphs"), "{e}");
        }
    }
}

#[test]
fn dropout_masks_of_two_replays_differ() {
    let err = dropout_masks_differ(Device::Cpu, 16).unwrap_err();
    assert_eq!(err.to_string(), "a CUDA graph needs a CUDA device");
    let Some(cuda) = common::cuda_or_skip("the replay half of this test")
    else {
        return;
    };
    let _rng = common::global_rng();
    let (differ, dropped) = dropout_masks_differ(cuda, 1 << 16).unwrap();
    assert!((0.45..0.55).contains(&dropped), "dropped {dropped}");
    assert!((0.45..0.55).contains(&differ), "masks differ in {differ}");
}

/// The same seed, the same batches: the graphed steps (3 eager warm-up steps on
/// the side stream, then the capture, then replays) give the eager steps'
/// losses to bf16's accuracy, dropout included.
#[test]
fn graphed_steps_follow_eager_steps() {
    let config = common::tiny_config();
    let cpu = engine::learner(
        config,
        Device::Cpu,
        &TrainOptions::default(),
        &graphed(),
    );
    assert!(cpu.is_err());
    let Some(cuda) = common::cuda_or_skip("the graph half of this test") else {
        return;
    };
    let train = make_dataset(12 * 64, 8);
    let config = transformer_course::config::TransformerConfig {
        dropout: 0.1,
        ..common::tiny_config()
    };
    let run = |cuda_graph: bool| {
        let _rng = common::global_rng();
        // The recipe's precision, as the chapter's binary sets it: autocast's
        // dtype is per thread, and libtorch's default would be fp16.
        Precision::Bf16.configure(cuda).unwrap();
        let opts = TrainOptions {
            seed: 4,
            warmup: 10,
            ..TrainOptions::default()
        };
        let engine = EngineOptions {
            cuda_graph,
            ..EngineOptions::default()
        };
        let mut t = engine::learner(config, cuda, &opts, &engine).unwrap();
        common::losses_on_batches(&mut t, &train, 12, 64)
    };
    let (eager, graphed) = (run(false), run(true));
    for (step, (e, g)) in eager.iter().zip(&graphed).enumerate() {
        assert!(
            (e - g).abs() < 2e-2 * e.abs().max(1.0),
            "step {}: eager {e} vs graphed {g}",
            step + 1
        );
    }
}

/// Without a GPU the graph and stream objects fail with libtorch's own
/// sentence: the C++ exception crosses back through the shim as an error, not a
/// crash.
#[test]
fn without_a_gpu_graph_objects_fail_cleanly() {
    use workbench::sys::{CudaGraph, SideStream};
    // On a GPU, no CUDA call may run while another test thread captures.
    let _rng = common::global_rng();
    if tch::Cuda::is_available() {
        assert!(CudaGraph::new().is_ok());
        assert!(SideStream::new(0).is_ok());
        return;
    }
    if cuda_graphs_available().is_err() {
        assert!(CudaGraph::new().is_err());
        return;
    }
    for err in [
        CudaGraph::new().err().expect("a graph without a GPU"),
        SideStream::new(0).err().expect("a stream without a GPU"),
    ] {
        let text = err.to_string();
        assert!(text.contains("libtorch: "), "{text}");
        assert!(!text.contains('\n'), "{text}");
    }
}
