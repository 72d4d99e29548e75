//! Chapter 14 exercises — French dates: where attention peaks, and whether a
//! beam helps. Check with `cargo test --test exercises_ch14`.
use tch::{Device, Tensor};

use transformer_course::dates::{Field, Sample, Vocab, TGT_LEN};
use transformer_course::generate::{greedy_decode, sign_test_p_value};
use transformer_course::transformer::Transformer;

use crate::ch10_greedy_decode::beam_search;

/// ★★ ex14_peak_alignment — a second measure of "the head reads the right
/// words". Chapter 14's `field_attention` measures the attention *mass* on a
/// field's words; this one asks where each row *peaks*. `cross` is one decoder
/// layer's cross-attention [N, h, T, S] for `samples`, read with the true ISO
/// date as the decoder's input, so that row k is the query that writes ISO
/// character k (row 0 reads BOS and writes the year's first digit). For each
/// head, return `[year, month, day]`: the share of the field's rows, over all
/// samples, whose largest weight falls on a piece inside the field's span.
pub fn peak_alignment(cross: &Tensor, samples: &[Sample]) -> Vec<[f64; 3]> {
    // ANCHOR: ex14_peak_alignment
    // HINT: argmax over the last dimension gives every row's strongest piece,
    // HINT: [N, h, T]; read it back once. Field::iso_chars says which rows
    // HINT: write a field, Sample::span which pieces wrote it. Count the rows
    // HINT: that peak inside the span, per head and field, and divide by the
    // HINT: number of rows counted.
    let peaks = cross.argmax(-1, false).to_device(Device::Cpu); // [N, h, T]
    let heads = cross.size()[1];
    (0..heads)
        .map(|h| {
            Field::ALL.map(|field| {
                let (rows, mut hits) = (field.iso_chars(), 0);
                for (b, sample) in samples.iter().enumerate() {
                    let span = sample.span(field);
                    for k in rows.clone() {
                        let at = [b as i64, h, k as i64];
                        hits += usize::from(
                            span.contains(&(peaks.int64_value(&at) as usize)),
                        );
                    }
                }
                hits as f64 / (samples.len() * rows.len()) as f64
            })
        })
        .collect()
    // ANCHOR_END: ex14_peak_alignment
}

/// Greedy decoding and a beam on the same rows, scored against the truth.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Rows each decoder gets right.
    pub greedy_right: usize,
    pub beam_right: usize,
    /// Rows only one of the two gets right: the pairs that disagree.
    pub only_greedy: usize,
    pub only_beam: usize,
    /// Chapter 11's sign test on the rows that disagree (two-sided, exact):
    /// how often two decoders equally good would split this unevenly.
    pub p_value: f64,
}

/// ★★ ex14_beam_dates — does a beam help on dates? Decode every row of `src`
/// ([N, S]) greedily (`greedy_decode`, at most `TGT_LEN` tokens) and with your
/// `ex10_beam_search` of width `width`, write both as text with `tgt.decode`,
/// and compare each with `truth[row]`. The two decoders read the same rows, so
/// compare them as pairs: count the rows only one of them gets right and test
/// that split, as chapter 11 tested a head.
pub fn compare_decoders(
    model: &Transformer,
    src: &Tensor,
    truth: &[String],
    tgt: &Vocab,
    width: usize,
) -> Comparison {
    // ANCHOR: ex14_beam_dates
    // HINT: greedy_decode takes the whole batch; beam_search one row [1, S]
    // HINT: at a time. A row counts for only_greedy when greedy is right and
    // HINT: the beam is not. Rows both get right, or both get wrong, say
    // HINT: nothing about which decoder is better.
    let greedy = greedy_decode(model, src, TGT_LEN).to_device(Device::Cpu);
    let mut c = Comparison {
        greedy_right: 0,
        beam_right: 0,
        only_greedy: 0,
        only_beam: 0,
        p_value: 1.0,
    };
    for (i, want) in truth.iter().enumerate() {
        let row = Vec::<i64>::try_from(greedy.get(i as i64)).expect("ids");
        let g = tgt.decode(&row) == *want;
        let one = src.narrow(0, i as i64, 1);
        let (tokens, _) = beam_search(model, &one, width, TGT_LEN);
        let b = tgt.decode(&tokens) == *want;
        c.greedy_right += usize::from(g);
        c.beam_right += usize::from(b);
        c.only_greedy += usize::from(g && !b);
        c.only_beam += usize::from(b && !g);
    }
    c.p_value = sign_test_p_value(c.only_greedy, c.only_beam);
    c
    // ANCHOR_END: ex14_beam_dates
}
