//! Chapter 10 exercises: `cargo test --test exercises_ch10`. Untrained models are
//! enough: every property here holds for any weights. They have dropout 0.1, so
//! that a forward pass in training mode shows.
mod common;

use common::{
    assert_close, assert_close_f64, assert_unchanged, eval_model, EVAL,
};
use exercises::ch10_greedy_decode::{
    beam_search, decode_step, greedy_decode_cached, sequence_log_prob, KvCache,
};
use rstest::rstest;
use tch::{Kind, Tensor};
use transformer_course::data::{make_dataset, row};
use transformer_course::generate::greedy_decode;
use transformer_course::transformer::Transformer;
use transformer_course::vocab::{BOS_ID, EOS_ID, PAD_ID, SEQ_LEN, VOCAB};

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

#[test]
fn ex10_sequence_log_prob_takes_one_pass() {
    // One teacher-forced pass scores every position at once; a pass per prefix gives
    // the same sum with n times the work. The decoder counts its passes (#[counted]
    // on Decoder::forward_with_weights, which every full decoder pass goes through),
    // however the solution reached them: a loop, an iterator, a helper. A scorer
    // that steps ex10_kv_cache's cache token by token runs no full pass: n passes
    // of one position each, not the one pass the exercise asks for.
    let (_vs, m) = eval_model(0, 1);
    let src = one_source(1);
    let tokens = [BOS_ID, 3, 1, 4, 1, 5, EOS_ID];
    let (lp, counts) = counted::watch(|| sequence_log_prob(&m, &src, &tokens));
    assert!(lp.is_finite() && lp < 0.0, "a log-probability, got {lp}");
    let passes = counts.of("Decoder::forward_with_weights");
    if passes != 1 {
        let found = if passes == 0 {
            "ex10_sequence_log_prob ran no full decoder pass: it scored the answer a \
             token at a time (a cached step per token?)"
                .to_string()
        } else {
            format!(
                "ex10_sequence_log_prob ran the decoder {passes} times for one answer \
                 of {} tokens: one model pass per prefix",
                tokens.len() - 1
            )
        };
        panic!(
            "{}",
            common::shortcut_message(
                &found,
                "the decoder's causal mask makes position i see only tokens ≤ i, so one \
                 teacher-forced pass over [BOS, t₁, …, tₙ₋₁] gives every log p(tᵢ | t<ᵢ) \
                 at once"
            )
        );
    }
}

#[rstest]
fn ex10_sequence_log_prob_of_one_token_is_a_distribution(
    #[values(0, 1)] seed: i64,
) {
    let (_vs, m) = eval_model(seed, 1);
    let src = one_source(2);
    let each: Vec<f64> = (0..VOCAB)
        .map(|t| sequence_log_prob(&m, &src, &[BOS_ID, t]))
        .collect();
    let direct = next_log_probs(&m, &src, &[BOS_ID]);
    assert!(
        !each.iter().all(|lp| (lp - direct[BOS_ID as usize]).abs() < 1e-6),
        "every one-token answer [BOS, t] gets log p(BOS | BOS): the entry picked is the decoder \
         input's token, not the label's. The label of position i is tokens[i + 1] (the second \
         half of teacher_forcing)"
    );
    let total: f64 = each.iter().map(|lp| lp.exp()).sum();
    assert_close_f64(
        total,
        1.0,
        1e-6,
        &format!(
            "p(t | BOS) summed over every token t must be 1: a log_softmax over the vocabulary \
             (the last dimension) {EVAL}"
        ),
    );
    assert_close_f64(
        each[7],
        direct[7],
        1e-6,
        &format!(
            "log p(7 | BOS): the logits at the BOS position, entry 7 {EVAL}"
        ),
    );
}

#[test]
fn ex10_sequence_log_prob_follows_the_chain_rule() {
    let (_vs, m) = eval_model(4, 2);
    let src = one_source(5);
    let prefix = [BOS_ID, 9, 4];
    let whole = sequence_log_prob(&m, &src, &[BOS_ID, 9, 4, 11]);
    let expected = sequence_log_prob(&m, &src, &prefix)
        + next_log_probs(&m, &src, &prefix)[11];
    assert_close_f64(
        whole,
        expected,
        1e-6,
        &format!(
            "log p(a b c) must be log p(a b) + log p(c | a b): decoder input tokens[..n], \
             labels tokens[1..] (teacher_forcing), every label counted once {EVAL}"
        ),
    );
    assert!(whole < 0.0, "a log-probability is negative, got {whole}");
}

/// Feeds `tokens` ([B, n]) to a new cache one column at a time and compares every
/// step's logits with the last position of a full decoder pass over the prefix;
/// checks that the cache grows by exactly one position per step. Returns the cache.
fn step_through(m: &Transformer, src: &Tensor, tokens: &Tensor) -> KvCache {
    tch::no_grad(|| {
        let mut cache = KvCache::new(m, src);
        let (memory, src_mask) = m.encode(src, false);
        for t in 0..tokens.size()[1] {
            let newest = tokens.narrow(1, t, 1).copy();
            let before = newest.copy();
            let got = decode_step(m, &mut cache, &newest);
            assert_unchanged(&before, &newest, "newest");
            let prefix = tokens.narrow(1, 0, t + 1);
            let full =
                m.decode(&prefix, &memory, &src_mask, false).select(1, -1);
            assert_close(
                &got,
                &full,
                1e-4,
                &format!(
                    "step {t}: not the logits of a full decoder pass at position {t}. Check the \
                     new token's position (row t of the table, × √d_model on the embedding), \
                     that every layer attends over its cached keys and values plus the new \
                     one, that PAD keys stay hidden, and that each sub-layer has its own \
                     LayerNorm (ln1, ln2, ln3: the test's differ) {EVAL}"
                ),
            );
            assert_eq!(
                cache.len(),
                t + 1,
                "step {t}: the cache must hold the {} tokens fed so far",
                t + 1
            );
            for (i, (k, v)) in cache.self_kv.iter().enumerate() {
                assert!(
                    k.size()[2] == t + 1 && v.size()[2] == t + 1,
                    "step {t}, layer {i}: the cache holds keys and values of {} and {} \
                     positions, but {} tokens were fed: each step appends exactly one",
                    k.size()[2],
                    v.size()[2],
                    t + 1
                );
            }
        }
        cache
    })
}

#[rstest]
fn ex10_kv_cache_step_equals_full_recomputation(
    #[values(0, 1)] seed: i64,
    #[values(1, 2)] layers: i64,
) {
    let (vs, m) = eval_model(seed, layers);
    // Three different LayerNorms per layer: untrained ones are all the same, and
    // ln2 (or ln1) in place of ln3 would give the same numbers.
    common::perturb_layer_norms(&vs, seed + 30);
    let src = make_dataset(3, seed as u64 + 20).src;
    // A PAD inside the prefix (untrained models emit them) must stay a hidden key.
    let tokens = common::ids(&[
        &[BOS_ID, 5, 9, 4, 7, 3],
        &[BOS_ID, 8, PAD_ID, 6, 11, 5],
        &[BOS_ID, 12, 10, EOS_ID, PAD_ID, PAD_ID],
    ]);
    step_through(&m, &src, &tokens);
}

#[rstest]
fn ex10_kv_cache_step_reads_the_cache_and_computes_one_position(
    #[values(1, 2)] layers: i64,
) {
    // After four steps, change what the cache holds. A step that appends one position
    // and attends over the cache keeps the changed entries and gives other logits; a
    // step that recomputes the past from the tokens does neither.
    let (_vs, m) = eval_model(7, layers);
    let src = make_dataset(2, 3).src;
    let tokens = common::ids(&[&[BOS_ID, 5, 9, 4], &[BOS_ID, 8, 6, 11]]);
    let mut cache = step_through(&m, &src, &tokens);
    let newest = common::ids(&[&[7], &[3]]);
    let honest = tch::no_grad(|| {
        let mut copy = KvCache {
            tokens: cache.tokens.copy(),
            self_kv: cache
                .self_kv
                .iter()
                .map(|(k, v)| (k.copy(), v.copy()))
                .collect(),
            cross_kv: cache
                .cross_kv
                .iter()
                .map(|(k, v)| (k.copy(), v.copy()))
                .collect(),
            src_mask: cache.src_mask.copy(),
        };
        decode_step(&m, &mut copy, &newest)
    });
    let changed: Vec<(Tensor, Tensor)> = common::seeded(11, || {
        cache
            .self_kv
            .iter()
            .map(|(k, v)| (k.randn_like() * 2.0, v.randn_like() * 2.0))
            .collect()
    });
    cache.self_kv = changed.iter().map(|(k, v)| (k.copy(), v.copy())).collect();
    let got = tch::no_grad(|| decode_step(&m, &mut cache, &newest));
    for (i, ((k, v), (k0, v0))) in
        cache.self_kv.iter().zip(&changed).enumerate()
    {
        assert_eq!(
            k.size()[2],
            5,
            "layer {i}: one position appended to the four cached"
        );
        let kept = k.narrow(2, 0, 4).equal(k0) && v.narrow(2, 0, 4).equal(v0);
        assert!(
            kept,
            "{}",
            common::shortcut_message(
                &format!(
                    "layer {i}: the keys and values of the four earlier positions were \
                     computed again"
                ),
                "that is the work a KV cache exists to save: each step computes only the \
                 newest position and appends it, the past stays as cached"
            )
        );
    }
    let moved = common::max_abs_diff(&got, &honest);
    assert!(
        moved > 1e-3,
        "{}",
        common::shortcut_message(
            &format!(
                "the logits did not change when the cached keys and values did (|Δ| = \
                 {moved:e}): the step recomputed the past instead of attending over its cache"
            ),
            "fed one position, the decoder's self-attention reads every earlier position \
             from the cache"
        )
    );
}

#[test]
fn ex10_kv_cache_step_embeds_only_the_newest_token() {
    // The earlier tokens in the cache get ids no embedding has (PAD stays PAD, so the
    // padding mask is the same). A step that embeds only the newest token, as the
    // exercise asks, never looks them up; one that embeds the whole prefix again and
    // keeps its last row gets the same numbers, but here the lookup fails.
    let (_vs, m) = eval_model(7, 1);
    let src = make_dataset(2, 3).src;
    let tokens = common::ids(&[&[BOS_ID, 5, 9, 4], &[BOS_ID, 8, 6, 11]]);
    let mut cache = step_through(&m, &src, &tokens);
    let newest = common::ids(&[&[7], &[3]]);
    let want = tch::no_grad(|| {
        let (memory, src_mask) = m.encode(&src, false);
        let all = Tensor::cat(&[&tokens, &newest], 1);
        m.decode(&all, &memory, &src_mask, false).select(1, -1)
    });
    cache.tokens = cache.tokens.masked_fill(&cache.tokens.ne(PAD_ID), 1000);
    let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tch::no_grad(|| decode_step(&m, &mut cache, &newest))
    }));
    let got = step.unwrap_or_else(|_| {
        panic!(
            "{}",
            common::shortcut_message(
                "the step failed on earlier tokens whose ids no embedding has (they were set \
                 to 1000 in cache.tokens; PAD stayed PAD): it embedded the whole prefix again",
                "only the newest token is embedded, at position t; cache.tokens serves for \
                 the padding mask alone"
            )
        )
    });
    assert_close(
        &got,
        &want,
        1e-4,
        &format!("the step after the earlier ids changed (PAD kept): {EVAL}"),
    );
}

#[rstest]
fn ex10_kv_cache_gives_exactly_the_greedy_tokens(
    #[values(0, 1, 2, 3)] seed: i64,
    #[values(1, 2)] layers: i64,
) {
    let (_vs, m) = eval_model(seed, layers);
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
         grows by one key and value per step, and that PAD keys are masked {EVAL}.\n  got:\n\
         {got}\n  greedy_decode:\n{expected}"
    );
}

#[test]
fn ex10_kv_cache_stops_and_pads_like_greedy() {
    // An output bias that says EOS at step 3 for everybody: rows finish, the loop stops.
    let (_vs, m) = eval_model(5, 1);
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
    let (_vs, m) = eval_model(6, 1);
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
    let (_vs, m) = eval_model(seed, 1);
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
    let (_vs, m) = eval_model(seed, 1);
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

/// The best of all answers [BOS, EOS] and [BOS, a, b] (a ≠ EOS) by `rank`, which gets
/// the answer and its log-probability; with that log-probability.
fn best_short_answer(
    m: &Transformer,
    src: &Tensor,
    rank: impl Fn(&[i64], f64) -> f64,
) -> (Vec<i64>, f64) {
    let first = next_log_probs(m, src, &[BOS_ID]);
    let mut all = vec![(vec![BOS_ID, EOS_ID], first[EOS_ID as usize])];
    for a in (0..VOCAB).filter(|&a| a != EOS_ID) {
        let second = next_log_probs(m, src, &[BOS_ID, a]);
        for b in 0..VOCAB {
            all.push((
                vec![BOS_ID, a, b],
                first[a as usize] + second[b as usize],
            ));
        }
    }
    all.into_iter()
        .max_by(|x, y| rank(&x.0, x.1).total_cmp(&rank(&y.0, y.1)))
        .expect("candidates")
}

#[test]
fn ex10_beam_search_ranks_by_the_whole_log_probability() {
    // An EOS made more or less likely at the start: for some of these biases the most
    // likely answer is not the one with the best log-probability per token, so a beam
    // ranked by the average (length-normalised) returns a different answer.
    let src = one_source(1);
    let mut separating = 0;
    for bias in [-2.0, 0.0, 1.0, 2.0, 3.0, 4.0] {
        let (_vs, m) = eval_model(5, 1);
        tch::no_grad(|| {
            let _ = m.out_proj.bs.as_ref().unwrap().get(EOS_ID).fill_(bias);
        });
        let best = best_short_answer(&m, &src, |_, s| s);
        let per_token =
            best_short_answer(&m, &src, |t, s| s / (t.len() - 1) as f64);
        separating += usize::from(best.0 != per_token.0);
        let (tokens, score) = beam_search(&m, &src, VOCAB as usize, 3);
        assert_eq!(
            tokens, best.0,
            "EOS bias {bias}: returned {tokens:?} (log-probability {score}), but {:?} is more \
             likely ({}). Rank the beams by their whole log-probability, the sum, not per \
             token: the exercise asks for the most likely sequence",
            best.0, best.1
        );
    }
    assert!(
        separating > 0,
        "test bug: on none of the biases does ranking per token change the answer"
    );
}

#[test]
fn ex10_beam_search_keeps_finished_beams() {
    // A model that says EOS first: [BOS, EOS] is the best beam after one step, and no
    // longer sequence can beat it (each token only adds a log-probability ≤ 0). It
    // must survive the next rounds as a finished beam among the new candidates.
    let (_vs, m) = eval_model(9, 1);
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
    let (_vs, m) = eval_model(8, 2);
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

#[test]
fn ex10_beam_search_runs_one_decoder_pass_per_beam_and_step() {
    // Counted where the decoder does the work (`#[counted]` on the course's
    // Decoder::forward_with_weights, which every full decoder pass goes through;
    // a step of ex10_kv_cache's cache does not, and is not limited here): a search
    // extends at most `width` beams per round, for at most max_len - 1 rounds, so it
    // runs at most that many passes (fewer when the beams share one batched pass). A
    // rescoring from scratch of every candidate runs a pass per candidate, ×VOCAB.
    let (_vs, m) = eval_model(8, 2);
    let src = one_source(4);
    let tgt = Tensor::from_slice(&[BOS_ID, 3]).unsqueeze(0);
    let (_, one) =
        counted::watch(|| tch::no_grad(|| m.forward(&src, &tgt, false)));
    assert_eq!(
        one.of("Decoder::forward_with_weights"),
        1,
        "test bug: a model pass is not counted as one decoder pass"
    );
    let width = 3;
    let (_, counts) = counted::watch(|| beam_search(&m, &src, width, SEQ_LEN));
    let passes = counts.of("Decoder::forward_with_weights");
    let most = width * (SEQ_LEN - 1);
    assert!(
        passes <= most,
        "{}",
        common::shortcut_message(
            &format!(
                "width {width}: {passes} decoder passes, more than {most} (one per beam \
                 and round, for at most max_len - 1 rounds): candidates were scored \
                 from scratch"
            ),
            "each round, one decoder pass per unfinished beam gives the next token's \
             log-probabilities for all its extensions at once; a candidate's score is its \
             beam's score plus that log-probability"
        )
    );
}
