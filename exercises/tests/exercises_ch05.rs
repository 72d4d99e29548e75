//! Chapter 05 exercises: `cargo test --test exercises_ch05`.
mod common;

use common::{annealed_rate, assert_close, build, config, randn, seeded};
use exercises::ch05_decoder::{
    cross_attention_sublayer, DecoderOnlyBlock, DecoderOnlyLm,
};
use rstest::rstest;
use tch::nn::OptimizerConfig;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::TransformerConfig;
use transformer_course::decoder::DecoderLayer;
use transformer_course::train::masked_cross_entropy;
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask,
};
use transformer_course::vocab::{digit_token, BOS_ID, EOS_ID, PAD_ID};
use workbench::kernels::{self, Bound};

fn max_over(t: &Tensor) -> f64 {
    t.abs().max().double_value(&[])
}

#[rstest]
fn ex05_cross_sublayer_matches_the_layer(
    #[values(0, 6)] seed: i64,
    // Target length 6 = source length: keys and values from x then run without a
    // shape error, and the check below names the mistake.
    #[values(4, 6)] lt: i64,
) {
    // Dropout 0.1 in the layer: the sub-layer runs in inference mode, and
    // cross_mha.forward(.., true) drops attention weights at random.
    let cfg = TransformerConfig {
        dropout: common::EVAL_DROPOUT,
        ..config(16, 2, 32)
    };
    let (vs, layer) = build(seed, |p| DecoderLayer::new(p, &cfg).unwrap());
    // Three different LayerNorms, so that using ln1 or ln3 for ln2 shows.
    common::perturb_layer_norms(&vs, seed + 10);
    let (x, memory) =
        (randn(seed + 1, &[2, lt, 16]), randn(seed + 2, &[2, 6, 16]));
    let src = common::ids(&[&[3, 4, 5, 2, 0, 0], &[7, 8, 2, 0, 0, 0]]);
    let mask = make_padding_mask(&src);
    let (y, w) = cross_attention_sublayer(&layer, &x, &memory, &mask);
    let (a, expected_w) = layer.cross_mha.forward(
        &x.apply(&layer.ln2),
        &memory,
        &memory,
        Some(&mask),
        false,
    );
    assert_close(
        &y,
        &(&x + a),
        1e-5,
        &format!(
            "not x + CrossAttention(LN₂(x), memory): queries from ln2(x), keys and values \
             the memory as it is, plus the residual x {}",
            common::EVAL
        ),
    );
    assert_close(
        &w,
        &expected_w,
        1e-6,
        "the weights are not cross_mha's on (ln2(x), memory)",
    );
    let on_pad = w
        .get(1)
        .narrow(2, 3, 3)
        .abs()
        .sum(Kind::Float)
        .double_value(&[]);
    assert_eq!(
        on_pad, 0.0,
        "weight on PAD source positions: pass cross_mask to the attention"
    );
}

#[rstest]
fn ex05_cross_sublayer_does_not_mix_decoder_positions(
    // 3 decoder positions against 3 source positions too: with equal lengths keys and
    // values taken from x run without a shape error and reach the check.
    #[values(5, 3)] lt: i64,
) {
    let (_vs, layer) =
        build(1, |p| DecoderLayer::new(p, &config(16, 4, 32)).unwrap());
    let (x, memory) = (randn(2, &[1, lt, 16]), randn(3, &[1, 3, 16]));
    let mask = Tensor::zeros([1, 1, 1, 3], (Kind::Bool, Device::Cpu));
    let (y, _) = cross_attention_sublayer(&layer, &x, &memory, &mask);
    let x2 = x.copy();
    let _ = x2.get(0).get(2).fill_(3.0);
    let (y2, _) = cross_attention_sublayer(&layer, &x2, &memory, &mask);
    let moved = (&y - &y2).abs().amax([0i64, 2].as_slice(), false);
    for p in 0..lt {
        assert_eq!(
            moved.double_value(&[p]) > 0.0,
            p == 2,
            "changing decoder position 2 moved position {p}: cross-attention's keys and \
             values are the memory, not x"
        );
    }
    let (y3, _) = cross_attention_sublayer(&layer, &x, &(&memory * 2.0), &mask);
    let least = (&y - &y3)
        .abs()
        .amax([0i64, 2].as_slice(), false)
        .min()
        .double_value(&[]);
    assert!(
        least > 0.0,
        "some decoder position does not read the memory"
    );
}

fn block_config(dropout: f64) -> TransformerConfig {
    TransformerConfig {
        dropout,
        ..config(16, 4, 32)
    }
}

/// A block whose two LayerNorms differ, so that using one for the other shows.
fn block(seed: i64, dropout: f64) -> (nn::VarStore, DecoderOnlyBlock) {
    let (vs, b) = build(seed, |p| {
        DecoderOnlyBlock::new(p, &block_config(dropout)).unwrap()
    });
    common::perturb_layer_norms(&vs, seed + 10);
    (vs, b)
}

/// x + drop(SelfAttention(LN₁(x))), then + drop(FFN(LN₂(·))), from the block's parts.
fn block_formula(
    b: &DecoderOnlyBlock,
    x: &Tensor,
    mask: &Tensor,
    train: bool,
) -> (Tensor, Tensor) {
    let h = x.apply(&b.ln1);
    let (a, w) = b.self_mha.forward(&h, &h, &h, Some(mask), train);
    let x1 = x + a.dropout(b.dropout, train);
    (
        &x1 + b.ffn.forward(&x1.apply(&b.ln2)).dropout(b.dropout, train),
        w,
    )
}

#[rstest]
fn ex05_decoder_only_block_matches_the_formula(#[values(0, 2)] seed: i64) {
    let (_vs, b) = block(seed, 0.0);
    let x = randn(seed + 1, &[2, 6, 16]);
    let mask = make_causal_mask(6, Device::Cpu);
    let (y, w) = b.forward(&x, &mask, false);
    let (expected, expected_w) = block_formula(&b, &x, &mask, false);
    assert_close(
        &y,
        &expected,
        1e-5,
        "not Pre-Norm x + SelfAttention(LN₁(x)), then + FFN(LN₂(·)): ln2 guards the FFN",
    );
    assert_close(
        &w,
        &expected_w,
        1e-6,
        "the weights are not self_mha's on LN₁(x)",
    );
}

#[test]
fn ex05_decoder_only_block_drops_out_like_the_decoder_layer() {
    let (_vs, b) = block(3, 0.3);
    let x = randn(4, &[2, 6, 16]);
    let mask = make_causal_mask(6, Device::Cpu);
    let (got, _) = seeded(5, || b.forward(&x, &mask, true));
    let (want, _) = seeded(5, || block_formula(&b, &x, &mask, true));
    assert_close(
        &got,
        &want,
        1e-5,
        "in training: dropout on the attention output and on the FFN output, each before \
         its residual addition (and self_mha.forward(.., train))",
    );
}

#[rstest]
#[case::target_mask(true)]
#[case::padding_only(false)]
fn ex05_decoder_only_block_uses_the_mask_it_is_given(#[case] causal: bool) {
    // PAD at the start, in the middle and at the end; dropout 0.1, evaluated with
    // train = false. A block that builds its own causal mask, reads one row of the
    // batch's mask, or drops out in evaluation gives other numbers here.
    let (_vs, b) = block(6, common::EVAL_DROPOUT);
    let ids = common::ids(&[
        &[PAD_ID, 5, 6, 7, PAD_ID, 8],
        &[4, 9, PAD_ID, 10, 11, PAD_ID],
    ]);
    let mask = if causal {
        make_target_mask(&ids)
    } else {
        make_padding_mask(&ids).expand([2, 1, 6, 6], false)
    };
    let x = randn(7, &[2, 6, 16]);
    let (y, w) = b.forward(&x, &mask, false);
    let (expected, expected_w) = block_formula(&b, &x, &mask, false);
    let which = if causal {
        "a [B, 1, L, L] mask that hides the future and the PAD keys of each row"
    } else {
        "a [B, 1, L, L] mask that hides only PAD keys (no causal part: the block must \
         not add one)"
    };
    assert_close(
        &w,
        &expected_w,
        1e-6,
        &format!(
            "with {which}: the weights differ. Pass self_mask itself to self_mha, for \
             every row of the batch, and `train` as given {}",
            common::EVAL
        ),
    );
    assert_close(
        &y,
        &expected,
        1e-5,
        &format!("with {which}: the output differs {}", common::EVAL),
    );
}

#[rstest]
fn ex05_decoder_only_block_is_causal(#[values(1, 3, 5)] k: i64) {
    let (_vs, b) = block(4, 0.0);
    let x = randn(5, &[2, 6, 16]);
    let mask = make_causal_mask(6, Device::Cpu);
    let changed = x.copy();
    let _ = changed.narrow(1, k, 6 - k).fill_(2.0);
    let (y, w) = b.forward(&x, &mask, false);
    let (y2, _) = b.forward(&changed, &mask, false);
    let d = (&y - &y2).abs();
    let before = max_over(&d.narrow(1, 0, k));
    assert!(before < 1e-6, "positions before {k} saw the future (moved by {before:e}): use self_mask");
    assert!(
        max_over(&d.narrow(1, k, 6 - k)) > 1e-3,
        "positions from {k} on did not move"
    );
    let above = w.triu(1).abs().sum(Kind::Float).double_value(&[]);
    assert_eq!(
        above, 0.0,
        "weight above the diagonal: the mask was not applied"
    );
}

/// `d₁ … dₙ BOS dₙ … d₁ EOS PAD…` and its labels (PAD where the prompt is predicted).
fn lm_batch(rows: &[Vec<i64>], len: usize) -> (Tensor, Tensor) {
    let (mut input, mut labels) = (vec![], vec![]);
    for digits in rows {
        let n = digits.len();
        let mut s: Vec<i64> = digits.iter().map(|&d| digit_token(d)).collect();
        s.push(BOS_ID);
        s.extend(digits.iter().rev().map(|&d| digit_token(d)));
        s.push(EOS_ID);
        s.resize(len + 1, PAD_ID);
        input.extend_from_slice(&s[..len]);
        labels.extend((0..len).map(|i| if i >= n { s[i + 1] } else { PAD_ID }));
    }
    let shape = [rows.len() as i64, len as i64];
    (
        Tensor::from_slice(&input).view(shape),
        Tensor::from_slice(&labels).view(shape),
    )
}

/// The training test: layers, steps, the rate's peak and warm-up (then down to
/// zero, `annealed_rate`) and digit counts (each step one length, in turn).
const LM_LAYERS: i64 = 2;
const LM_STEPS: usize = 1500;
const LM_PEAK_LR: f64 = 3e-3;
const LM_WARMUP: usize = 100;
const LM_LENGTHS: std::ops::Range<u64> = 3..6;

/// A one-block model with dropout 0.1, so that `train` shows in its output.
fn lm(seed: i64) -> (nn::VarStore, DecoderOnlyLm) {
    let cfg = TransformerConfig {
        num_layers: 1,
        max_len: 26,
        dropout: common::EVAL_DROPOUT,
        ..config(32, 4, 64)
    };
    build(seed, |p| DecoderOnlyLm::new(p, &cfg).unwrap())
}

#[test]
fn ex05_decoder_only_lm_matches_the_pipeline() {
    // PAD at the start and in the middle of a row, where only the padding half of the
    // mask hides it.
    let (_vs, m) = lm(2);
    let ids = common::ids(&[
        &[0, 0, 4, 5, BOS_ID, 5, 4],
        &[6, 0, 7, BOS_ID, 7, 0, 6],
    ]);
    let pipeline = |train: bool| {
        tch::no_grad(|| {
            let mask = make_target_mask(&ids); // causal | padding
            let mut x = m.embed.forward(&ids, train);
            for b in &m.blocks {
                x = b.forward(&x, &mask, train).0;
            }
            x.apply(&m.ln_final).apply(&m.out_proj)
        })
    };
    let logits = tch::no_grad(|| m.forward(&ids, false));
    assert_close(
        &logits,
        &pipeline(false),
        1e-5,
        &format!(
            "not embed → blocks → ln_final → out_proj with one causal-or-PAD mask: is \
             PAD hidden from the later positions, the final LayerNorm there, and \
             `train` passed on as given? {}",
            common::EVAL
        ),
    );
    // In training the same seed draws the same dropout masks, in the same order.
    let got = seeded(3, || tch::no_grad(|| m.forward(&ids, true)));
    let want = seeded(3, || pipeline(true));
    assert_close(
        &got,
        &want,
        1e-5,
        "with train = true: pass `train` to the embedding and to every block, so that \
         training drops out as the decoder does (the test model has dropout 0.1)",
    );
}

#[rstest]
fn ex05_decoder_only_lm_is_causal_and_ignores_trailing_pad(
    #[values(2, 6, 9)] k: i64,
) {
    let (_vs, m) = lm(0);
    let (ids, _) = lm_batch(&[vec![1, 2, 3, 4], vec![9, 0, 5]], 12);
    let logits = tch::no_grad(|| m.forward(&ids, false));
    assert_eq!(logits.size(), vec![2, 12, 13], "logits are [B, L, vocab]");
    let changed = ids.copy();
    let _ = changed.narrow(1, k, 12 - k).fill_(12);
    let d = tch::no_grad(|| (&logits - m.forward(&changed, false)).abs());
    let before = max_over(&d.narrow(1, 0, k));
    assert!(
        before < 1e-5,
        "positions before {k} saw the future (moved by {before:e})"
    );
    assert!(
        max_over(&d.narrow(1, k, 12 - k)) > 1e-3,
        "positions from {k} on did not move"
    );
    // Appending PAD changes none of the existing positions.
    let pad = Tensor::full([2, 5], PAD_ID, (Kind::Int64, Device::Cpu));
    let padded = Tensor::cat(&[ids.shallow_clone(), pad], 1);
    let p = tch::no_grad(|| m.forward(&padded, false)).narrow(1, 0, 12);
    assert_close(
        &p,
        &logits,
        1e-5,
        "appending PAD moved the logits of the real positions",
    );
}

/// Whether `digits` belongs to the sequences the training never shows: one in five,
/// by the number the digits spell.
fn held_out(digits: &[i64]) -> bool {
    digits.iter().fold(0, |n, &d| n * 10 + d) % 5 == 0
}

/// The model's greedy answer to each prompt `d₁ … dₙ BOS` (all rows of one length
/// n): n tokens, each the most likely next one given the prompt and the answer so
/// far.
fn greedy_answers(m: &DecoderOnlyLm, rows: &[Vec<i64>]) -> Vec<Vec<i64>> {
    let n = rows[0].len();
    let mut seq: Vec<Vec<i64>> = rows
        .iter()
        .map(|r| {
            let mut s: Vec<i64> = r.iter().map(|&d| digit_token(d)).collect();
            s.push(BOS_ID);
            s
        })
        .collect();
    for _ in 0..n {
        let flat: Vec<i64> = seq.iter().flatten().copied().collect();
        let ids = Tensor::from_slice(&flat).view([rows.len() as i64, -1]);
        let logits = tch::no_grad(|| m.forward(&ids, false));
        let next = logits.select(1, -1).argmax(-1, false);
        for (i, s) in seq.iter_mut().enumerate() {
            s.push(next.int64_value(&[i as i64]));
        }
    }
    seq.iter().map(|s| s[n + 1..].to_vec()).collect()
}

#[test]
fn ex05_decoder_only_lm_reverses_sequences_it_never_saw() {
    let cfg = TransformerConfig {
        num_layers: LM_LAYERS,
        max_len: 26,
        ..config(32, 4, 64)
    };
    // The kernel matrix varies the seeds (COURSE_TEST_SEED); 0 by default.
    let seed = kernels::seed_offset();
    let (vs, m) = build(seed as i64, |p| DecoderOnlyLm::new(p, &cfg).unwrap());
    let mut opt = nn::Adam {
        beta2: 0.98,
        ..Default::default()
    }
    .build(&vs, LM_PEAK_LR)
    .unwrap();
    let mut rng = 12345u64 + 7919 * seed;
    let mut next = move |n: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % n
    };
    let mut draw = |len: u64| -> Vec<i64> {
        loop {
            let d: Vec<i64> = (0..len).map(|_| next(10) as i64).collect();
            if !held_out(&d) {
                return d;
            }
        }
    };
    let mut losses = vec![];
    for step in 0..LM_STEPS {
        opt.set_lr(annealed_rate(step, LM_PEAK_LR, LM_WARMUP, LM_STEPS));
        let len = LM_LENGTHS.start
            + step as u64 % (LM_LENGTHS.end - LM_LENGTHS.start);
        let rows: Vec<Vec<i64>> = (0..64).map(|_| draw(len)).collect();
        let (ids, labels) = lm_batch(&rows, 2 * len as usize + 1);
        let loss = masked_cross_entropy(&m.forward(&ids, true), &labels, 0.0);
        opt.backward_step(&loss);
        losses.push(loss.double_value(&[]));
    }
    assert!(
        losses[0] > 2.0,
        "an untrained model should be near ln(13) ≈ 2.56, got {:.3}",
        losses[0]
    );
    // Every held-out sequence of each length: the model never saw them.
    let (mut in_order, mut digits_only, mut total) = (0, 0, 0);
    let mut by_length = vec![];
    for len in LM_LENGTHS {
        let unseen: Vec<Vec<i64>> = (0..10i64.pow(len as u32))
            .map(|k| {
                let s = format!("{k:0width$}", width = len as usize);
                s.bytes().map(|b| (b - b'0') as i64).collect::<Vec<i64>>()
            })
            .filter(|d| held_out(d))
            .step_by((10usize.pow(len as u32) / 500).max(1)) // about 100 of each length
            .collect();
        let before = in_order;
        for (digits, got) in unseen.iter().zip(greedy_answers(&m, &unseen)) {
            let want: Vec<i64> =
                digits.iter().rev().map(|&d| digit_token(d)).collect();
            let (mut a, mut b) = (got.clone(), want.clone());
            a.sort();
            b.sort();
            total += 1;
            if got == want {
                in_order += 1;
            } else if a == b {
                digits_only += 1;
            }
        }
        by_length.push(format!(
            "{} of {} with {len} digits",
            in_order - before,
            unseen.len()
        ));
    }
    let share = in_order as f64 / total as f64;
    kernels::report(
        &format!("unseen sequences reversed (of {total})"),
        in_order as f64,
        Bound::AtLeast((0.9 * total as f64).ceil()),
    );
    assert!(
        share >= 0.9,
        "only {in_order} of {total} unseen sequences reversed exactly after {LM_STEPS} \
         steps ({}); {digits_only} more had the right digits in the wrong order. The \
         training loss went {:.3} → {:.3}, but a falling loss is not enough: does every \
         position know where it stands, and does training hide the future as inference \
         does?",
        by_length.join(", "),
        losses[0],
        losses[LM_STEPS - 1]
    );
}
