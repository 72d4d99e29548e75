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

/// Softmax under autocast runs in fp32 only when no dtype is passed: the attention
/// weights must come out fp32 under CUDA autocast (bf16), as PyTorch's do, and stay
/// fp32 on the CPU, where autocast is off.
#[test]
fn attention_weights_stay_fp32_under_autocast() {
    use workbench::sys::{autocast, set_cuda_autocast_bf16};
    let (_vs, m) = mha(16, 2, Device::Cpu);
    let x = Tensor::rand([2, 5, 16], (Kind::Float, Device::Cpu));
    let (_, w) = autocast(true, || m.forward(&x, &x, &x, None, false));
    assert_eq!(w.kind(), Kind::Float, "CPU weights");
    let Some(cuda) = common::cuda_or_skip("the autocast half of this test")
    else {
        return;
    };
    let (_vs, m) = mha(16, 2, cuda);
    let x = x.to_device(cuda);
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
        "softmax ran in bf16: a dtype was passed"
    );
}
