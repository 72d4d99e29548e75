// Wrong solutions of ex08_lm_layout.

// MUTANT: counts_bos — the label that predicts BOS (at n − 1) counts too
    let n = digits.len();
    let mut s = [PAD_ID; LM_LEN];
    for (i, &d) in digits.iter().enumerate() {
        s[i] = digit_token(d);
        s[2 * n - i] = digit_token(d);
    }
    s[n] = BOS_ID;
    s[2 * n + 1] = EOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n - 1..].copy_from_slice(&s[n..LM_LEN - 1]);
    (input, labels)

// MUTANT: skips_first_answer — the first counted label is at n + 1
    let n = digits.len();
    let mut s = [PAD_ID; LM_LEN];
    for (i, &d) in digits.iter().enumerate() {
        s[i] = digit_token(d);
        s[2 * n - i] = digit_token(d);
    }
    s[n] = BOS_ID;
    s[2 * n + 1] = EOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n + 1..].copy_from_slice(&s[n + 2..]);
    (input, labels)

// MUTANT: not_reversed — the answer repeats the digits in their order
    let n = digits.len();
    let mut s = [PAD_ID; LM_LEN];
    for (i, &d) in digits.iter().enumerate() {
        s[i] = digit_token(d);
        s[n + 1 + i] = digit_token(d);
    }
    s[n] = BOS_ID;
    s[2 * n + 1] = EOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n..].copy_from_slice(&s[n + 1..]);
    (input, labels)

// MUTANT: labels_not_shifted — labels[i] = s[i] instead of s[i + 1]
    let n = digits.len();
    let mut s = [PAD_ID; LM_LEN];
    for (i, &d) in digits.iter().enumerate() {
        s[i] = digit_token(d);
        s[2 * n - i] = digit_token(d);
    }
    s[n] = BOS_ID;
    s[2 * n + 1] = EOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n + 1..].copy_from_slice(&s[n + 1..LM_LEN - 1]);
    (input, labels)

// MUTANT: eos_padding — fills the input's tail with EOS instead of PAD
    let n = digits.len();
    let mut s = [EOS_ID; LM_LEN];
    for (i, &d) in digits.iter().enumerate() {
        s[i] = digit_token(d);
        s[2 * n - i] = digit_token(d);
    }
    s[n] = BOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n..2 * n + 1].copy_from_slice(&s[n + 1..2 * n + 2]);
    (input, labels)

// MUTANT: no_eos_label — the answer's digits count, the EOS after them does not
    let n = digits.len();
    let mut s = [PAD_ID; LM_LEN];
    for (i, &d) in digits.iter().enumerate() {
        s[i] = digit_token(d);
        s[2 * n - i] = digit_token(d);
    }
    s[n] = BOS_ID;
    s[2 * n + 1] = EOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n..2 * n].copy_from_slice(&s[n + 1..2 * n + 1]);
    (input, labels)

// MUTANT: bos_first — BOS opens the row (BOS d₁ … dₙ SEP-less), the answer follows the digits
    let n = digits.len();
    let mut s = [PAD_ID; LM_LEN];
    s[0] = BOS_ID;
    for (i, &d) in digits.iter().enumerate() {
        s[1 + i] = digit_token(d);
        s[2 * n - i] = digit_token(d);
    }
    s[2 * n + 1] = EOS_ID;
    let mut input = [PAD_ID; LM_LEN - 1];
    let mut labels = [PAD_ID; LM_LEN - 1];
    input.copy_from_slice(&s[..LM_LEN - 1]);
    labels[n..].copy_from_slice(&s[n + 1..]);
    (input, labels)
