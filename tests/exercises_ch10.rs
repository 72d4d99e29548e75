//! Chapter 10 exercises: `cargo test --test exercises_ch10`. Untrained models are enough:
//! every property here holds for any weights.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::data::{make_dataset, row, BOS_ID, EOS_ID, SEQ_LEN};
use transformer_course::decode::greedy_decode;
use transformer_course::exercises::ch10_greedy_decode::{beam_search, greedy_decode_cached, sequence_log_prob};
use transformer_course::transformer::{Transformer, TransformerConfig};

fn model(seed: i64, layers: i64) -> (nn::VarStore, Transformer) {
    tch::manual_seed(seed);
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = TransformerConfig { d_model: 32, num_heads: 4, dff: 64, num_layers: layers, dropout: 0.0, ..TransformerConfig::reverse_task() };
    let m = Transformer::new(vs.root(), cfg).unwrap();
    (vs, m)
}

/// Log-probabilities of every next token after `prefix`, by a plain decoder pass.
fn next_log_probs(m: &Transformer, src: &Tensor, prefix: &[i64]) -> Vec<f64> {
    tch::no_grad(|| {
        let (memory, mask) = m.encode(src, false);
        let (logits, _) = m.decode(&Tensor::from_slice(prefix).unsqueeze(0), &memory, &mask, false);
        Vec::try_from(&logits.get(0).get(-1).log_softmax(-1, Kind::Double)).unwrap()
    })
}

fn one_source(i: i64) -> Tensor {
    make_dataset(8, 7).src.narrow(0, i, 1)
}

#[rstest]
fn ex10_log_prob_of_one_token_is_a_distribution(#[values(0, 1)] seed: i64) {
    let (_vs, m) = model(seed, 1);
    let src = one_source(2);
    let total: f64 = (0..13).map(|t| sequence_log_prob(&m, &src, &[BOS_ID, t]).exp()).sum();
    assert!((total - 1.0).abs() < 1e-6, "p(t | BOS) over all t sums to {total}");
    let direct = next_log_probs(&m, &src, &[BOS_ID]);
    assert!((sequence_log_prob(&m, &src, &[BOS_ID, 7]) - direct[7]).abs() < 1e-6);
}

#[test]
fn ex10_log_prob_follows_the_chain_rule() {
    let (_vs, m) = model(4, 2);
    let src = one_source(5);
    let prefix = [BOS_ID, 9, 4];
    let whole = sequence_log_prob(&m, &src, &[BOS_ID, 9, 4, 11]);
    let expected = sequence_log_prob(&m, &src, &prefix) + next_log_probs(&m, &src, &prefix)[11];
    assert!((whole - expected).abs() < 1e-6, "log p(a b c) must be log p(a b) + log p(c | a b): {whole} vs {expected}");
    assert!(whole < 0.0);
}

#[rstest]
fn ex10_kv_cache_gives_exactly_the_greedy_tokens(#[values(0, 1, 2, 3)] seed: i64, #[values(1, 2)] layers: i64) {
    let (_vs, m) = model(seed, layers);
    let src = make_dataset(16, seed as u64 + 10).src;
    let expected = greedy_decode(&m, &src, SEQ_LEN);
    let got = greedy_decode_cached(&m, &src, SEQ_LEN);
    assert_eq!(got.size(), expected.size(), "different number of steps");
    assert!(got.equal(&expected), "cached decoding chose other tokens:\n{got}\nvs\n{expected}");
}

#[test]
fn ex10_kv_cache_stops_and_pads_like_greedy() {
    // An output bias that says EOS at step 3 for everybody: rows finish, the loop stops.
    let (_vs, m) = model(5, 1);
    tch::no_grad(|| {
        let _ = m.out_proj.bs.as_ref().unwrap().get(EOS_ID).fill_(100.0);
    });
    let src = make_dataset(4, 0).src;
    let got = greedy_decode_cached(&m, &src, SEQ_LEN);
    assert_eq!(got.size(), vec![4, 2], "BOS + EOS and nothing more");
    assert!(got.equal(&greedy_decode(&m, &src, SEQ_LEN)));
    // With max_len 4 nothing is longer than 4.
    let (_vs, m) = model(6, 1);
    let short = greedy_decode_cached(&m, &src, 4);
    assert!(short.size()[1] <= 4);
    assert!(short.equal(&greedy_decode(&m, &src, 4)));
}

/// The tokens of greedy_decode's row, up to and including the first EOS.
fn greedy_tokens(m: &Transformer, src: &Tensor, max_len: usize) -> Vec<i64> {
    let r = row(&greedy_decode(m, src, max_len), 0);
    match r.iter().position(|&t| t == EOS_ID) {
        Some(e) => r[..=e].to_vec(),
        None => r, // never said EOS: all max_len tokens
    }
}

#[rstest]
fn ex10_beam_of_width_one_is_greedy(#[values(0, 1, 2)] seed: i64, #[values(0, 3)] i: i64) {
    let (_vs, m) = model(seed, 1);
    let src = one_source(i);
    let (tokens, score) = beam_search(&m, &src, 1, SEQ_LEN);
    assert_eq!(tokens, greedy_tokens(&m, &src, SEQ_LEN));
    let rescored = sequence_log_prob_reference(&m, &src, &tokens);
    assert!((score - rescored).abs() < 1e-6, "returned score {score} but the sequence scores {rescored}");
}

/// Σ log p(tᵢ | t<ᵢ) step by step, independent of the exercise's sequence_log_prob.
fn sequence_log_prob_reference(m: &Transformer, src: &Tensor, tokens: &[i64]) -> f64 {
    (1..tokens.len()).map(|i| next_log_probs(m, src, &tokens[..i])[tokens[i] as usize]).sum()
}

#[rstest]
fn ex10_beam_search_finds_the_best_short_answer(#[values(0, 1, 2, 3)] seed: i64) {
    // With max_len 3 (BOS + two tokens) and width 13 (the whole vocabulary), beam search
    // is exhaustive: it must return the best of all sequences, found by brute force here.
    let (_vs, m) = model(seed, 1);
    let src = one_source(1);
    let first = next_log_probs(&m, &src, &[BOS_ID]);
    let mut best = (vec![BOS_ID, EOS_ID], first[EOS_ID as usize]);
    for a in (0..13).filter(|&a| a != EOS_ID) {
        let second = next_log_probs(&m, &src, &[BOS_ID, a]);
        for b in 0..13 {
            let s = first[a as usize] + second[b as usize];
            if s > best.1 {
                best = (vec![BOS_ID, a, b], s);
            }
        }
    }
    let (tokens, score) = beam_search(&m, &src, 13, 3);
    assert_eq!(tokens, best.0, "scores: got {score}, best {}", best.1);
    assert!((score - best.1).abs() < 1e-6);
}

#[test]
fn ex10_wider_beams_score_what_they_return() {
    let (_vs, m) = model(8, 2);
    let src = one_source(4);
    for width in [2, 3, 5] {
        let (tokens, score) = beam_search(&m, &src, width, SEQ_LEN);
        assert_eq!(tokens[0], BOS_ID);
        assert!(tokens.len() <= SEQ_LEN);
        assert!(tokens.last() == Some(&EOS_ID) || tokens.len() == SEQ_LEN, "{tokens:?} neither ended nor hit max_len");
        assert!(tokens[1..tokens.len() - 1].iter().all(|&t| t != EOS_ID), "EOS inside the answer: {tokens:?}");
        let rescored = sequence_log_prob_reference(&m, &src, &tokens);
        assert!((score - rescored).abs() < 1e-6, "width {width}: returned {score}, the sequence scores {rescored}");
    }
}
