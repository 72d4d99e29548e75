//! Chapter 08 exercises: `cargo test --test exercises_ch08`.
use exercises::ch08_reverse_data::{lm_example, make_copy_dataset, LM_LEN};
use rstest::rstest;
use transformer_course::data::{make_dataset, row};
use transformer_course::vocab::{
    digit_token, digits_of, BOS_ID, EOS_ID, MAX_LEN, MIN_LEN, PAD_ID, SEQ_LEN,
};

#[rstest]
fn ex08_copy_dataset_targets_are_the_sources(#[values(0, 1, 42)] seed: u64) {
    let data = make_copy_dataset(200, seed);
    assert_eq!(
        data.src.size(),
        vec![200, SEQ_LEN as i64],
        "src is [n, SEQ_LEN]"
    );
    assert_eq!(
        data.tgt.size(),
        vec![200, SEQ_LEN as i64],
        "tgt is [n, SEQ_LEN]"
    );
    assert!(
        data.src.equal(&make_dataset(200, seed).src),
        "the sources must be make_dataset's for the same seed"
    );
    let mut lengths = std::collections::BTreeSet::new();
    for i in 0..200 {
        let (s, t) = (row(&data.src, i), row(&data.tgt, i));
        let n = digits_of(&s).len();
        assert!(
            (MIN_LEN..=MAX_LEN).contains(&n),
            "row {i}: {n} digits in the source"
        );
        lengths.insert(n);
        assert_eq!(t[0], BOS_ID, "row {i}: the target starts with BOS: {t:?}");
        assert_eq!(
            digits_of(&t),
            digits_of(&s),
            "row {i}: the copy target must hold the source's digits in order"
        );
        assert_eq!(
            t[n + 1],
            EOS_ID,
            "row {i}: EOS right after the digits: {t:?}"
        );
        assert!(
            t[n + 2..].iter().all(|&x| x == PAD_ID),
            "row {i}: PAD after EOS: {t:?}"
        );
    }
    assert!(lengths.len() > 5, "lengths should vary, got {lengths:?}");
}

#[test]
fn ex08_copy_dataset_is_deterministic_by_seed() {
    let (a, b, c) = (
        make_copy_dataset(50, 3),
        make_copy_dataset(50, 3),
        make_copy_dataset(50, 4),
    );
    assert!(a.tgt.equal(&b.tgt), "the same seed must give the same data");
    assert!(!a.tgt.equal(&c.tgt), "another seed must give other data");
}

#[test]
fn ex08_lm_layout_of_a_short_example() {
    let (input, labels) = lm_example(&[7, 3, 0]);
    let t = digit_token;
    let mut want_input =
        vec![t(7), t(3), t(0), BOS_ID, t(0), t(3), t(7), EOS_ID];
    want_input.resize(LM_LEN - 1, PAD_ID);
    assert_eq!(
        input.to_vec(),
        want_input,
        "input for digits 7 3 0: the prompt, BOS, the reversal, EOS, PAD"
    );
    // Position 3 holds BOS and must predict the first answer digit; nothing before it counts.
    let mut want_labels =
        vec![PAD_ID, PAD_ID, PAD_ID, t(0), t(3), t(7), EOS_ID];
    want_labels.resize(LM_LEN - 1, PAD_ID);
    assert_eq!(
        labels.to_vec(),
        want_labels,
        "labels for digits 7 3 0: PAD while the next token is still prompt; the input BOS (at \
         index 3) predicts the first answer digit"
    );
}

#[rstest]
#[case(vec![5])]
#[case(vec![1, 2, 3, 4, 5, 6])]
#[case(vec![9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2])]
fn ex08_lm_layout_properties(#[case] digits: Vec<i64>) {
    let n = digits.len();
    let (input, labels) = lm_example(&digits);
    // The prompt is the digits, then BOS.
    let prompt: Vec<i64> = digits.iter().map(|&d| digit_token(d)).collect();
    assert_eq!(
        &input[..n],
        prompt.as_slice(),
        "the input starts with the digits' tokens"
    );
    assert_eq!(input[n], BOS_ID, "BOS follows the prompt");
    // Labels are the input shifted by one, wherever they count.
    for i in 0..LM_LEN - 2 {
        if labels[i] != PAD_ID {
            assert_eq!(
                labels[i],
                input[i + 1],
                "label {i} is not the next input token"
            );
        }
    }
    // Exactly the answer and its EOS count.
    let counted: Vec<i64> =
        labels.iter().copied().filter(|&t| t != PAD_ID).collect();
    let mut answer: Vec<i64> =
        digits.iter().rev().map(|&d| digit_token(d)).collect();
    answer.push(EOS_ID);
    assert_eq!(
        counted, answer,
        "the labels that count are the reversed digits and EOS"
    );
    assert_eq!(
        labels.iter().position(|&t| t != PAD_ID),
        Some(n),
        "the first counted label sits at the BOS (index n = {n})"
    );
}
