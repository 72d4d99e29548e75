//! `--precision bf16` on the CPU: CPU autocast through the shim, the loss in
//! fp32; and, on a GPU, CUDA autocast in bf16.
use tch::{Device, Kind, Tensor};
use transformer_course::data::make_dataset;
use transformer_course::train::{Learner, TrainOptions};
use workbench::engine::{self, EngineOptions};
use workbench::precision::Precision;
use workbench::sys::{
    autocast_on, cpu_autocast_is_bf16, cpu_autocast_is_enabled,
    cuda_autocast_is_bf16, cuda_autocast_is_enabled, set_cpu_autocast_bf16,
    set_cuda_autocast_bf16,
};

mod common;

#[test]
fn cpu_autocast_runs_matrix_products_in_bf16_and_switches_back() {
    let _switches = common::global_rng(); // autocast is process-wide per thread
    set_cpu_autocast_bf16().unwrap();
    assert!(cpu_autocast_is_bf16().unwrap());
    let a = Tensor::ones([3, 4], (Kind::Float, Device::Cpu));
    let b = Tensor::ones([4, 2], (Kind::Float, Device::Cpu));
    let on = autocast_on(Device::Cpu, true, || {
        assert!(cpu_autocast_is_enabled().unwrap());
        assert!(
            !cuda_autocast_is_enabled().unwrap(),
            "only the CPU's switch moves"
        );
        // Nested regions restore the state of the one around them.
        let off = autocast_on(Device::Cpu, false, || a.matmul(&b));
        assert_eq!(off.kind(), Kind::Float);
        assert!(cpu_autocast_is_enabled().unwrap());
        a.matmul(&b)
    });
    assert_eq!(on.kind(), Kind::BFloat16);
    assert!(!cpu_autocast_is_enabled().unwrap());
    assert_eq!(a.matmul(&b).kind(), Kind::Float);
}

/// The recipe's GPU precision: CUDA autocast in bf16, through the shim, while
/// the CPU's switch stays off.
#[test]
fn cuda_autocast_runs_matrix_products_in_bf16() {
    let Some(cuda) = common::cuda_or_skip("CUDA autocast") else {
        return;
    };
    let _switches = common::global_rng();
    set_cuda_autocast_bf16(true).unwrap();
    assert!(cuda_autocast_is_bf16().unwrap());
    let a = Tensor::ones([3, 4], (Kind::Float, cuda));
    let on = autocast_on(cuda, true, || {
        assert!(cuda_autocast_is_enabled().unwrap());
        assert!(
            !cpu_autocast_is_enabled().unwrap(),
            "only CUDA's switch moves"
        );
        a.matmul(&a.tr())
    });
    assert_eq!(on.kind(), Kind::BFloat16);
    assert!(!cuda_autocast_is_enabled().unwrap());
}

#[test]
fn cpu_autocast_is_switched_off_even_after_a_panic() {
    let _switches = common::global_rng();
    let caught = std::panic::catch_unwind(|| {
        autocast_on(Device::Cpu, true, || panic!("inside the region"))
    });
    assert!(caught.is_err());
    assert!(!cpu_autocast_is_enabled().unwrap());
}

#[test]
fn the_recipe_is_fp32_on_the_cpu_and_bf16_on_cuda() {
    assert_eq!(Precision::recipe(Device::Cpu), Precision::Fp32);
    assert_eq!(Precision::recipe(Device::Cuda(0)), Precision::Bf16);
    assert_eq!(EngineOptions::default().precision, None);
}

/// A few dozen steps of the small model in each precision, without dropout:
/// bf16 starts from the same loss (to bf16's accuracy), then takes its own
/// path, and still learns.
#[test]
fn bf16_training_on_the_cpu_learns_and_differs_from_fp32() {
    let train = make_dataset(60 * 32, 6);
    let config = transformer_course::config::TransformerConfig {
        num_layers: 1,
        ..common::tiny_config()
    };
    let run = |precision: Precision| {
        let _rng = common::global_rng();
        let opts = TrainOptions {
            seed: 1,
            warmup: 30,
            ..TrainOptions::default()
        };
        let engine = EngineOptions {
            precision: Some(precision),
            ..EngineOptions::default()
        };
        let mut t =
            engine::learner(config, Device::Cpu, &opts, &engine).unwrap();
        let losses = common::losses_on_batches(&mut t, &train, 60, 32);
        assert!(
            !cpu_autocast_is_enabled().unwrap(),
            "the step left autocast on"
        );
        // The weights and the optimizer stay fp32 whatever the forward ran in.
        assert!(t
            .trainer()
            .vs
            .trainable_variables()
            .iter()
            .all(|v| v.kind() == Kind::Float));
        losses
    };
    let (fp32, bf16) = (run(Precision::Fp32), run(Precision::Bf16));
    assert!(
        (fp32[0] - bf16[0]).abs() < 0.05,
        "{} vs {}",
        fp32[0],
        bf16[0]
    );
    assert!(fp32 != bf16, "bf16 autocast did not change a single loss");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for losses in [&fp32, &bf16] {
        let (first, last) = (mean(&losses[..5]), mean(&losses[55..]));
        assert!(last < 0.85 * first, "did not learn: {first} -> {last}");
    }
}
