//! The tokens of the reversal task. Chapter 08 builds the data from them; the
//! model's vocabulary size and sequence length (chapters 01 and 06) come from
//! here too.
// ANCHOR: vocab
/// Token id of padding. Masks, the loss and the embedding's frozen row key on it.
pub const PAD_ID: i64 = 0;
pub const BOS_ID: i64 = 1;
pub const EOS_ID: i64 = 2;
/// Digit d is token d + NUM_OFFSET.
pub const NUM_OFFSET: i64 = 3;
pub const VOCAB: i64 = NUM_OFFSET + 10; // 13
pub const MIN_LEN: usize = 3;
pub const MAX_LEN: usize = 12;
/// Room for the longest sequence plus BOS and EOS.
pub const SEQ_LEN: usize = MAX_LEN + 2; // 14
                                        // ANCHOR_END: vocab

/// The token of digit `d` (0–9).
pub fn digit_token(d: i64) -> i64 {
    d + NUM_OFFSET
}

/// A token sequence in words: `<bos> 5 9 0 3 7 <eos> <pad>…`.
pub fn tokens_to_words(tokens: &[i64]) -> String {
    tokens
        .iter()
        .map(|&t| match t {
            PAD_ID => "<pad>".to_string(),
            BOS_ID => "<bos>".to_string(),
            EOS_ID => "<eos>".to_string(),
            d => (d - NUM_OFFSET).to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The digits of a token sequence, up to the first EOS (BOS and PAD skipped).
pub fn digits_of(tokens: &[i64]) -> Vec<i64> {
    tokens
        .iter()
        .take_while(|&&t| t != EOS_ID)
        .filter(|&&t| t >= NUM_OFFSET)
        .map(|t| t - NUM_OFFSET)
        .collect()
}
