//! The libtorch/tch traps the book warns about, pinned down so a reader can poke at them.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::config::TransformerConfig;
use transformer_course::transformer::make_causal_mask;

mod common;

fn mha(d: i64, h: i64, device: Device) -> (nn::VarStore, MultiHeadAttention) {
    let _rng = common::global_rng();
    tch::manual_seed(0);
    let vs = nn::VarStore::new(device);
    let cfg = TransformerConfig {
        d_model: d,
        num_heads: h,
        ..common::tiny_config()
    };
    let m = MultiHeadAttention::new(vs.root(), &cfg).unwrap();
    (vs, m)
}

#[rstest]
#[case(2, 5, 4, 3)]
#[case(1, 14, 4, 32)]
fn view_after_transpose_is_an_error(
    #[case] b: i64,
    #[case] l: i64,
    #[case] h: i64,
    #[case] dk: i64,
) {
    let x = Tensor::randn([b, h, l, dk], (Kind::Float, Device::Cpu));
    let t = x.transpose(1, 2); // [B, L, h, d_k], strides no longer row-major
    assert!(!t.is_contiguous());
    let err = t
        .f_view([b, l, h * dk])
        .expect_err("view on a transposed tensor must fail");
    assert!(
        err.to_string().contains("view size is not compatible"),
        "{err}"
    );
    // The two fixes agree with each other and with the data.
    let reshaped = t.reshape([b, l, h * dk]);
    assert!(reshaped.equal(&t.contiguous().view([b, l, h * dk])));
    assert!(reshaped.view([b, l, h, dk]).equal(&t));
}

#[test]
fn view_on_contiguous_output_is_fine() {
    let x = Tensor::randn([2, 5, 12], (Kind::Float, Device::Cpu));
    assert!(x.f_view([2, 5, 3, 4]).is_ok());
}

/// SDPA's bool mask says where attention is *allowed*; ours says where it is *forbidden*.
#[rstest]
fn sdpa_bool_mask_is_the_opposite_of_ours(#[values(4, 9)] l: i64) {
    let (_vs, mha) = mha(16, 2, Device::Cpu);
    let x = Tensor::rand([2, l, 16], (Kind::Float, Device::Cpu));
    let ours = make_causal_mask(l, Device::Cpu);
    let (expected, _) = mha.forward(&x, &x, &x, Some(&ours), false);

    let (q, k, v) = (
        mha.project(&x, &mha.W_q),
        mha.project(&x, &mha.W_k),
        mha.project(&x, &mha.W_v),
    );
    let sdpa = |mask: &Tensor| {
        let y = Tensor::scaled_dot_product_attention(
            &q,
            &k,
            &v,
            Some(mask),
            0.0,
            false,
            None,
            false,
        );
        mha.merge(&y).apply(&mha.W_o)
    };
    let inverted = sdpa(&ours.logical_not());
    assert!(
        inverted.allclose(&expected, 1e-5, 1e-5, false),
        "SDPA with the inverted mask must equal ours"
    );
    let wrong = sdpa(&ours);
    assert!(
        !wrong.allclose(&expected, 1e-3, 1e-3, false),
        "passing our mask unchanged must give a different answer"
    );
}

/// The course's own autocast switch (tch's calls a deprecated libtorch API that warns on
/// every call): on inside, the old state back outside, nesting respected, and restored
/// when the closure panics.
#[test]
fn autocast_switch_restores_the_previous_state() {
    use workbench::sys::autocast;
    let cuda_autocast_is_enabled =
        || workbench::sys::cuda_autocast_is_enabled().unwrap();
    assert!(!cuda_autocast_is_enabled());
    let inside = autocast(true, || {
        let nested_off = autocast(false, cuda_autocast_is_enabled);
        (
            cuda_autocast_is_enabled(),
            nested_off,
            cuda_autocast_is_enabled(),
        )
    });
    assert_eq!(inside, (true, false, true));
    assert!(!cuda_autocast_is_enabled());
    let panicked = std::panic::catch_unwind(|| {
        autocast(true, || panic!("inside autocast"))
    });
    assert!(panicked.is_err());
    assert!(
        !cuda_autocast_is_enabled(),
        "a panic inside must not leave autocast on"
    );
}

/// The attention weights are fp32 under autocast on either device, as PyTorch's are
/// under CUDA autocast. libtorch 2.11's CPU autocast, unlike CUDA's, leaves a softmax
/// of bf16 scores in bf16, so `scaled_dot_product` asks for fp32 itself; this test
/// switches the CPU's own autocast on (the CUDA switch does nothing to CPU kernels).
#[test]
fn attention_weights_are_fp32_under_cpu_autocast() {
    use workbench::sys::{autocast_on, set_cpu_autocast_bf16};
    let (_vs, m) = mha(16, 2, Device::Cpu);
    let x = Tensor::rand([2, 5, 16], (Kind::Float, Device::Cpu));
    let _switches = common::global_rng();
    set_cpu_autocast_bf16().unwrap();
    let (out, w) =
        autocast_on(Device::Cpu, true, || m.forward(&x, &x, &x, None, false));
    assert_eq!(
        out.kind(),
        Kind::BFloat16,
        "CPU autocast did not act: the test proves nothing"
    );
    assert_eq!(
        w.kind(),
        Kind::Float,
        "softmax ran in bf16 under CPU autocast"
    );
    let sums = w.sum_dim_intlist(-1, false, Kind::Float);
    assert!(sums.allclose(&sums.ones_like(), 1e-6, 1e-6, false));
}

/// The same under CUDA autocast (bf16), where libtorch would run softmax in fp32
/// even without being asked.
#[test]
fn attention_weights_are_fp32_under_cuda_autocast() {
    use workbench::sys::{autocast, set_cuda_autocast_bf16};
    let Some(cuda) = common::cuda_or_skip("CUDA autocast") else {
        return;
    };
    let (_vs, m) = mha(16, 2, cuda);
    let x = Tensor::rand([2, 5, 16], (Kind::Float, cuda));
    let _switches = common::global_rng();
    set_cuda_autocast_bf16(true).unwrap();
    let (out, w) = autocast(true, || m.forward(&x, &x, &x, None, false));
    assert_eq!(
        out.kind(),
        Kind::BFloat16,
        "autocast did not act: the test proves nothing"
    );
    assert_eq!(
        w.kind(),
        Kind::Float,
        "softmax ran in bf16 under CUDA autocast"
    );
}

/// A model converted wholly to 16 bits, with no autocast: the softmax still runs in
/// fp32, and the product with V gets V's type back (a mixed-type matmul is an error).
#[test]
fn a_16_bit_model_without_autocast_runs_with_fp32_weights() {
    for kind in [Kind::BFloat16, Kind::Half] {
        let (mut vs, m) = mha(16, 2, Device::Cpu);
        vs.set_kind(kind);
        let x =
            Tensor::rand([2, 5, 16], (Kind::Float, Device::Cpu)).to_kind(kind);
        let (out, w) = m.forward(&x, &x, &x, None, false);
        assert_eq!(out.kind(), kind);
        assert_eq!(w.kind(), Kind::Float);
        // The same weights as an fp32 softmax of the same 16-bit scores.
        let (out32, w32) = {
            let (mut vs32, m32) = mha(16, 2, Device::Cpu);
            vs32.copy(&vs).unwrap();
            vs32.set_kind(Kind::Float);
            m32.forward(
                &x.to_kind(Kind::Float),
                &x.to_kind(Kind::Float),
                &x.to_kind(Kind::Float),
                None,
                false,
            )
        };
        assert!(w.allclose(&w32, 0.0, 0.02, false), "{kind:?}");
        assert!(out.to_kind(Kind::Float).allclose(&out32, 0.0, 0.05, false));
    }
}
