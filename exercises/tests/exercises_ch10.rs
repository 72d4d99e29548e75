//! Chapter 10 exercises: `cargo test --test exercises_ch10`. Untrained models are
//! enough: every property here holds for any weights.
mod common;

use common::{assert_close_f64, assert_unchanged, tiny_model};
use exercises::ch10_greedy_decode::{
    beam_search, greedy_decode_cached, sequence_log_prob,
};
use rstest::rstest;
use tch::{Kind, Tensor};
use transformer_course::data::{make_dataset, row};
use transformer_course::generate::greedy_decode;
use transformer_course::transformer::Transformer;
use transformer_course::vocab::{BOS_ID, EOS_ID, SEQ_LEN, VOCAB};

/// Log-probabilities of every next token after `prefix`, by a plain decoder pass.
fn next_log_probs(m: &Transformer, src: &Tensor, prefix: &[i64]) -> Vec<f64> {
    tch::no_grad(|| {
        let (memory, mask) = m.encode(src, false);
        let logits = m.decode(
            &Tensor::from_slice(prefix).unsqueeze(0),
            &memory,
            &mask,
            false,
        );
        Vec::try_from(&logits.get(0).get(-1).log_softmax(-1, Kind::Double))
            .unwrap()
    })
}

fn one_source(i: i64) -> Tensor {
    make_dataset(8, 7).src.narrow(0, i, 1).copy()
}

#[rstest]
fn ex10_sequence_log_prob_of_one_token_is_a_distribution(
    #[values(0, 1)] seed: i64,
) {
    let (_vs, m) = tiny_model(seed, 1);
    let src = one_source(2);
    let total: f64 = (0..VOCAB)
        .map(|t| sequence_log_prob(&m, &src, &[BOS_ID, t]).exp())
        .sum();
    assert_close_f64(
        total,
        1.0,
        1e-6,
        "p(t | BOS) summed over every token t must be 1: a log_softmax over the vocabulary \
         (the last dimension)",
    );
    let direct = next_log_probs(&m, &src, &[BOS_ID]);
    assert_close_f64(
        sequence_log_prob(&m, &src, &[BOS_ID, 7]),
        direct[7],
        1e-6,
        "log p(7 | BOS): the logits at the BOS position, entry 7",
    );
}

#[test]
fn ex10_sequence_log_prob_follows_the_chain_rule() {
    let (_vs, m) = tiny_model(4, 2);
    let src = one_source(5);
    let prefix = [BOS_ID, 9, 4];
    let whole = sequence_log_prob(&m, &src, &[BOS_ID, 9, 4, 11]);
    let expected = sequence_log_prob(&m, &src, &prefix)
        + next_log_probs(&m, &src, &prefix)[11];
    assert_close_f64(
        whole,
        expected,
        1e-6,
        "log p(a b c) must be log p(a b) + log p(c | a b): decoder input tokens[..n], labels \
         tokens[1..] (teacher_forcing), every label counted once",
    );
    assert!(whole < 0.0, "a log-probability is negative, got {whole}");
}

#[rstest]
fn ex10_kv_cache_gives_exactly_the_greedy_tokens(
    #[values(0, 1, 2, 3)] seed: i64,
    #[values(1, 2)] layers: i64,
) {
    let (_vs, m) = tiny_model(seed, layers);
    let src = make_dataset(16, seed as u64 + 10).src;
    let original = src.copy();
    let expected = greedy_decode(&m, &src, SEQ_LEN);
    let got = greedy_decode_cached(&m, &src, SEQ_LEN);
    assert_unchanged(&original, &src, "src");
    assert_eq!(
        got.size(),
        expected.size(),
        "a different number of steps than greedy_decode"
    );
    let differ = got.ne_tensor(&expected).sum(Kind::Int64).int64_value(&[]);
    assert!(
        differ == 0,
        "cached decoding chose {differ} other token(s) than greedy_decode. Check the new \
         token's position (row t of the table, × √d_model on the embedding), that the cache \
         grows by one key and value per step, and that PAD keys are masked.\n  got:\n{got}\n  \
         greedy_decode:\n{expected}"
    );
}

#[test]
fn ex10_kv_cache_stops_and_pads_like_greedy() {
    // An output bias that says EOS at step 3 for everybody: rows finish, the loop stops.
    let (_vs, m) = tiny_model(5, 1);
    tch::no_grad(|| {
        let _ = m.out_proj.bs.as_ref().unwrap().get(EOS_ID).fill_(100.0);
    });
    let src = make_dataset(4, 0).src;
    let got = greedy_decode_cached(&m, &src, SEQ_LEN);
    assert_eq!(
        got.size(),
        vec![4, 2],
        "every row says EOS at once: BOS + EOS and nothing more"
    );
    assert!(
        got.equal(&greedy_decode(&m, &src, SEQ_LEN)),
        "not greedy_decode's tokens"
    );
    // With max_len 4 nothing is longer than 4.
    let (_vs, m) = tiny_model(6, 1);
    let short = greedy_decode_cached(&m, &src, 4);
    assert!(
        short.size()[1] <= 4,
        "max_len 4, but rows hold {} tokens",
        short.size()[1]
    );
    assert!(
        short.equal(&greedy_decode(&m, &src, 4)),
        "max_len 4: not greedy_decode's tokens"
    );
}

/// The tokens of greedy_decode's row, up to and including the first EOS.
fn greedy_tokens(m: &Transformer, src: &Tensor, max_len: usize) -> Vec<i64> {
    let r = row(&greedy_decode(m, src, max_len), 0);
    match r.iter().position(|&t| t == EOS_ID) {
        Some(e) => r[..=e].to_vec(),
        None => r, // never said EOS: all max_len tokens
    }
}

/// Σ log p(tᵢ | t<ᵢ) step by step, independent of the exercise's sequence_log_prob.
fn sequence_log_prob_reference(
    m: &Transformer,
    src: &Tensor,
    tokens: &[i64],
) -> f64 {
    (1..tokens.len())
        .map(|i| next_log_probs(m, src, &tokens[..i])[tokens[i] as usize])
        .sum()
}

#[rstest]
fn ex10_beam_search_of_width_one_is_greedy(
    #[values(0, 1, 2)] seed: i64,
    #[values(0, 3)] i: i64,
) {
    let (_vs, m) = tiny_model(seed, 1);
    let src = one_source(i);
    let (tokens, score) = beam_search(&m, &src, 1, SEQ_LEN);
    assert_eq!(
        tokens,
        greedy_tokens(&m, &src, SEQ_LEN),
        "width 1 must be greedy decoding"
    );
    let rescored = sequence_log_prob_reference(&m, &src, &tokens);
    assert_close_f64(
        score,
        rescored,
        1e-6,
        "the returned score is not the sequence's log-probability",
    );
}

#[rstest]
fn ex10_beam_search_finds_the_best_short_answer(
    #[values(0, 1, 2, 3)] seed: i64,
) {
    // With max_len 3 (BOS + two tokens) and width 13 (the whole vocabulary), beam search
    // is exhaustive: it must return the best of all sequences, found by brute force here.
    let (_vs, m) = tiny_model(seed, 1);
    let src = one_source(1);
    let first = next_log_probs(&m, &src, &[BOS_ID]);
    let mut best = (vec![BOS_ID, EOS_ID], first[EOS_ID as usize]);
    for a in (0..VOCAB).filter(|&a| a != EOS_ID) {
        let second = next_log_probs(&m, &src, &[BOS_ID, a]);
        for b in 0..VOCAB {
            let s = first[a as usize] + second[b as usize];
            if s > best.1 {
                best = (vec![BOS_ID, a, b], s);
            }
        }
    }
    let (tokens, score) = beam_search(&m, &src, VOCAB as usize, 3);
    assert_eq!(
        tokens, best.0,
        "not the best sequence (score {score}, the best scores {}): keep the best `width` of \
         all candidates and finished beams together, best first",
        best.1
    );
    assert_close_f64(score, best.1, 1e-6, "the best sequence's score");
}

#[test]
fn ex10_beam_search_keeps_finished_beams() {
    // A model that says EOS first: [BOS, EOS] is the best beam after one step, and no
    // longer sequence can beat it (each token only adds a log-probability ≤ 0). It
    // must survive the next rounds as a finished beam among the new candidates.
    let (_vs, m) = tiny_model(9, 1);
    tch::no_grad(|| {
        let _ = m.out_proj.bs.as_ref().unwrap().get(EOS_ID).fill_(8.0);
    });
    let src = one_source(2);
    assert_eq!(
        greedy_tokens(&m, &src, SEQ_LEN),
        vec![BOS_ID, EOS_ID],
        "test bug: EOS is not first"
    );
    for width in [2, 4] {
        let (tokens, score) = beam_search(&m, &src, width, SEQ_LEN);
        let ended = sequence_log_prob_reference(&m, &src, &[BOS_ID, EOS_ID]);
        assert_eq!(
            tokens,
            vec![BOS_ID, EOS_ID],
            "width {width}: returned {tokens:?} scoring {score}, but [BOS, EOS] scores {ended}: \
             a finished beam stays a candidate in every later round"
        );
    }
}

#[test]
fn ex10_beam_search_wider_beams_score_what_they_return() {
    let (_vs, m) = tiny_model(8, 2);
    let src = one_source(4);
    for width in [2, 3, 5] {
        let (tokens, score) = beam_search(&m, &src, width, SEQ_LEN);
        assert_eq!(
            tokens[0], BOS_ID,
            "width {width}: the beam starts with BOS: {tokens:?}"
        );
        assert!(
            tokens.len() <= SEQ_LEN,
            "width {width}: longer than max_len: {tokens:?}"
        );
        assert!(
            tokens.last() == Some(&EOS_ID) || tokens.len() == SEQ_LEN,
            "width {width}: {tokens:?} neither ended nor hit max_len"
        );
        let inner = &tokens[1..tokens.len() - 1];
        assert!(
            inner.iter().all(|&t| t != EOS_ID),
            "EOS inside the answer: {tokens:?}"
        );
        let rescored = sequence_log_prob_reference(&m, &src, &tokens);
        assert_close_f64(
            score,
            rescored,
            1e-6,
            &format!("width {width}: the returned score is not the sequence's"),
        );
    }
}
