//! Shapes of every module, the parameter count, the init decisions, and what is saved.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::attention::MultiHeadAttention;
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::decoder::Decoder;
use transformer_course::embedding::{
    sinusoidal_position_encoding, TokenAndPosition,
};
use transformer_course::encoder::Encoder;
use transformer_course::feed_forward::FeedForward;
use transformer_course::layers::{parameter_count, xavier_uniform_bound};
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask, Transformer,
};
use transformer_course::vocab::PAD_ID;

mod common;
use common::global_rng;

/// The course's config with other numbers, for building single layers.
fn cfg(
    d_model: i64,
    num_heads: i64,
    dropout: f64,
    init: Init,
) -> TransformerConfig {
    TransformerConfig {
        d_model,
        num_heads,
        d_ff: 4 * d_model,
        dropout,
        init,
        ..TransformerConfig::reverse_task()
    }
}

fn cpu() -> nn::VarStore {
    nn::VarStore::new(Device::Cpu)
}

#[test]
fn course_model_has_931_213_parameters() {
    let vs = cpu();
    Transformer::new(vs.root(), TransformerConfig::reverse_task()).unwrap();
    assert_eq!(parameter_count(&vs), 931_213);
}

#[test]
fn position_table_is_neither_trained_nor_saved() {
    let vs = cpu();
    let m =
        Transformer::new(vs.root(), TransformerConfig::reverse_task()).unwrap();
    let names: Vec<String> = vs.variables().into_keys().collect();
    assert!(
        names.iter().all(|n| !n.contains("pe")),
        "a position table leaked into the VarStore: {names:?}"
    );
    assert_eq!(m.encoder.embed.position_table().size(), vec![14, 128]);
    assert!(!m.encoder.embed.position_table().requires_grad());
}

#[test]
fn position_table_matches_the_formula() {
    let pe = sinusoidal_position_encoding(14, 8);
    for pos in [0i64, 3, 13] {
        for i in 0..4i64 {
            let angle = pos as f64 / 10000f64.powf(2.0 * i as f64 / 8.0);
            assert!(
                (pe.double_value(&[pos, 2 * i]) - angle.sin()).abs() < 1e-5
            );
            assert!(
                (pe.double_value(&[pos, 2 * i + 1]) - angle.cos()).abs() < 1e-5
            );
        }
    }
}

#[rstest]
#[case(Init::Paper, true, 1.0)]
#[case(Init::FrameworkDefault, true, 11.3)]
#[case(Init::TchDefault, false, 11.3)]
fn embedding_init(
    #[case] init: Init,
    #[case] pad_row_zero: bool,
    #[case] token_std: f64,
) {
    let _rng = global_rng();
    tch::manual_seed(0);
    let vs = cpu();
    let layer = TokenAndPosition::new(vs.root(), 13, &cfg(128, 4, 0.0, init));
    let pad_norm = layer.emb.ws.get(PAD_ID).norm().double_value(&[]);
    assert_eq!(pad_norm == 0.0, pad_row_zero, "‖PAD row‖ = {pad_norm}");
    let signal = layer.emb.ws.narrow(0, 1, 12) * (128f64).sqrt();
    let std = signal.std(true).double_value(&[]);
    assert!(
        (std / token_std - 1.0).abs() < 0.1,
        "token signal std {std}, expected ≈ {token_std}"
    );
}

#[test]
fn pad_row_stays_zero_through_training_steps() {
    // padding_idx keeps gradients out of the PAD row, so the zero survives Adam.
    use tch::nn::OptimizerConfig;
    let _rng = global_rng();
    tch::manual_seed(0);
    let vs = cpu();
    let layer =
        TokenAndPosition::new(vs.root(), 13, &cfg(16, 4, 0.0, Init::Paper));
    let mut opt = nn::Adam::default().build(&vs, 1e-2).unwrap();
    let ids = Tensor::from_slice(&[3i64, 4, 0, 0, 5, 0]).view([2, 3]);
    for _ in 0..3 {
        let loss = layer
            .forward(&ids, true)
            .pow_tensor_scalar(2)
            .sum(Kind::Float);
        opt.backward_step(&loss);
    }
    assert_eq!(
        layer
            .emb
            .ws
            .get(PAD_ID)
            .abs()
            .sum(Kind::Float)
            .double_value(&[]),
        0.0
    );
}

#[test]
fn paper_init_is_xavier_uniform_with_zero_bias() {
    let _rng = global_rng();
    tch::manual_seed(0);
    let vs = cpu();
    let ffn = FeedForward::new(vs.root(), &cfg(128, 4, 0.0, Init::Paper));
    let a = xavier_uniform_bound(128, 512);
    let w = &ffn.lin1.ws;
    assert!(w.abs().max().double_value(&[]) <= a);
    // U(-a, a) has standard deviation a/√3; 65k samples pin it to well under 2%.
    let std = w.std(true).double_value(&[]);
    assert!((std / (a / 3f64.sqrt()) - 1.0).abs() < 0.02, "std {std}");
    assert_eq!(
        ffn.lin1
            .bs
            .as_ref()
            .unwrap()
            .abs()
            .sum(Kind::Float)
            .double_value(&[]),
        0.0
    );
}

#[test]
fn shapes_of_every_module() {
    let _rng = global_rng();
    tch::manual_seed(0);
    let (b, ls, lt, d, h) = (3, 9, 7, 32, 4);
    let c = cfg(d, h, 0.1, Init::Paper);
    let vs = cpu();
    let root = vs.root();
    let x = Tensor::randn([b, ls, d], (Kind::Float, Device::Cpu));
    let src = Tensor::randint_low(1, 13, [b, ls], (Kind::Int64, Device::Cpu));
    let tgt = Tensor::randint_low(1, 13, [b, lt], (Kind::Int64, Device::Cpu));

    let emb = TokenAndPosition::new(&root / "e", 13, &c);
    assert_eq!(emb.forward(&src, false).size(), [b, ls, d]);

    let mha = MultiHeadAttention::new(&root / "a", &c).unwrap();
    assert_eq!(mha.split(&x).size(), [b, h, ls, d / h]);
    assert_eq!(mha.merge(&mha.split(&x)).size(), [b, ls, d]);
    let q = Tensor::randn([b, lt, d], (Kind::Float, Device::Cpu));
    let (out, w) = mha.forward(&q, &x, &x, None, false);
    assert_eq!((out.size(), w.size()), (vec![b, lt, d], vec![b, h, lt, ls]));

    let ffn = FeedForward::new(&root / "f", &c);
    assert_eq!(ffn.forward(&x).size(), [b, ls, d]);

    let enc = Encoder::new(&root / "enc", &c).unwrap();
    let src_mask = make_padding_mask(&src);
    assert_eq!(src_mask.size(), [b, 1, 1, ls]);
    let (memory, enc_w) = enc.forward_with_weights(&src, &src_mask, false);
    assert_eq!(memory.size(), [b, ls, d]);
    assert_eq!(enc_w[1].size(), [b, h, ls, ls]);

    let dec = Decoder::new(&root / "dec", &c).unwrap();
    let self_mask = make_target_mask(&tgt);
    assert_eq!(self_mask.size(), [b, 1, lt, lt]);
    let (y, weights) =
        dec.forward_with_weights(&tgt, &memory, &self_mask, &src_mask, false);
    assert_eq!(y.size(), [b, lt, d]);
    assert_eq!(weights.len(), 2);
    assert_eq!(weights[0].cross_attn.size(), [b, h, lt, ls]);
    assert_eq!(weights[0].self_attn.size(), [b, h, lt, lt]);

    let m = Transformer::new(&root / "m", c).unwrap();
    assert_eq!(m.forward(&src, &tgt, false).size(), [b, lt, 13]);
}

#[rstest]
fn attention_rows_sum_to_one(#[values(false, true)] masked: bool) {
    let _rng = global_rng();
    tch::manual_seed(1);
    let vs = cpu();
    let mha = MultiHeadAttention::new(vs.root(), &cfg(16, 2, 0.0, Init::Paper))
        .unwrap();
    let x = Tensor::randn([2, 5, 16], (Kind::Float, Device::Cpu));
    let mask = masked.then(|| make_causal_mask(5, Device::Cpu));
    let (_, w) = mha.forward(&x, &x, &x, mask.as_ref(), false);
    let sums = w.sum_dim_intlist(-1, false, Kind::Float);
    assert!((sums - 1.0).abs().max().double_value(&[]) < 1e-6);
    if masked {
        assert_eq!(
            w.triu(1).abs().max().double_value(&[]),
            0.0,
            "weight on a future key"
        );
    }
}

#[test]
fn dropout_only_when_training() {
    let _rng = global_rng();
    tch::manual_seed(0);
    let vs = cpu();
    let m = Transformer::new(
        vs.root(),
        TransformerConfig {
            dropout: 0.5,
            ..common::tiny_config()
        },
    )
    .unwrap();
    let src = Tensor::from_slice(&[3i64, 4, 5, 2]).view([1, 4]);
    let tgt = Tensor::from_slice(&[1i64, 5, 4, 3]).view([1, 4]);
    let eval = |train| tch::no_grad(|| m.forward(&src, &tgt, train));
    assert!(
        eval(false).equal(&eval(false)),
        "eval mode must be deterministic"
    );
    assert!(
        !eval(true).equal(&eval(true)),
        "train mode must apply dropout"
    );
}

#[rstest]
#[case::heads_do_not_divide(TransformerConfig { d_model: 130, ..TransformerConfig::reverse_task() }, "divisible")]
#[case::zero_heads(TransformerConfig { num_heads: 0, ..TransformerConfig::reverse_task() }, "num_heads")]
#[case::odd_d_model(TransformerConfig { d_model: 33, num_heads: 3, ..TransformerConfig::reverse_task() }, "even")]
#[case::no_layers(TransformerConfig { num_layers: 0, ..TransformerConfig::reverse_task() }, "num_layers")]
#[case::dropout_one(TransformerConfig { dropout: 1.0, ..TransformerConfig::reverse_task() }, "dropout")]
fn invalid_configs_are_errors(
    #[case] cfg: TransformerConfig,
    #[case] mentions: &str,
) {
    let err = Transformer::new(cpu().root(), cfg).unwrap_err().to_string();
    assert!(
        err.contains(mentions),
        "error '{err}' should mention '{mentions}'"
    );
}
