//! Chapter 01 exercises — the input layer.
//! Check with `cargo test --test exercises_ch01`.
use tch::{nn, Kind, Tensor};

use transformer_course::config::TransformerConfig;
use transformer_course::embedding::TokenAndPosition;

/// ★ ex01_table_by_loops — the sinusoidal table again, with two plain loops and
/// no tensor arithmetic, so that every entry is visibly the paper's formula.
/// Returns [max_len, d_model] (f32), equal to `sinusoidal_position_encoding`.
pub fn position_table_by_loops(max_len: i64, d_model: i64) -> Tensor {
    // ANCHOR: ex01_table_by_loops
    // HINT: position pos and pair i (0 ≤ i < d_model/2) have the angle
    // HINT: pos / 10000^(2i/d_model); column 2i holds its sine, column 2i+1
    // HINT: its cosine. Fill a Vec<f32> row by row, then make it a tensor of
    // HINT: shape [max_len, d_model] (Tensor::from_slice, view).
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 0..max_len {
        for i in 0..d_model / 2 {
            let exponent = 2.0 * i as f64 / d_model as f64;
            let angle = pos as f64 / 10000f64.powf(exponent);
            values.push(angle.sin() as f32);
            values.push(angle.cos() as f32);
        }
    }
    Tensor::from_slice(&values).view([max_len, d_model])
    // ANCHOR_END: ex01_table_by_loops
}

/// ★★ ex01_shift_by_rotation — why the table lets attention find relative
/// offsets: pe[p + k] is pe[p] with each (sin, cos) pair rotated by an angle
/// that depends on k and on the pair's frequency, but not on p. Given one row
/// `row` = pe[p] ([d_model]) and an offset `k`, return pe[p + k] without
/// knowing p.
pub fn shift_position_row(row: &Tensor, k: i64) -> Tensor {
    // ANCHOR: ex01_shift_by_rotation
    // HINT: a pair (sin a, cos a) with a = p·ω_i is a point on the unit circle;
    // HINT: moving to p + k adds k·ω_i to its angle. The angle-addition
    // HINT: formulas give the new pair from the old one. Reshape the row so
    // HINT: that each pair is one row of two columns.
    let d = row.size()[0];
    let pairs = row.view([d / 2, 2]);
    let (sin_a, cos_a) = (pairs.select(1, 0), pairs.select(1, 1));
    let opts = (Kind::Double, row.device());
    let rate = -(10000f64.ln()) / d as f64;
    let omega = (Tensor::arange_start_step(0, d, 2, opts) * rate).exp(); // ω_i
    let turn = omega * k as f64; // k·ω_i, the same for every p
    let (sin_k, cos_k) = (
        turn.sin().to_kind(row.kind()),
        turn.cos().to_kind(row.kind()),
    );
    let sin_ak = &sin_a * &cos_k + &cos_a * &sin_k;
    let cos_ak = cos_a * cos_k - sin_a * sin_k;
    Tensor::stack(&[sin_ak, cos_ak], 1).view([d])
    // ANCHOR_END: ex01_shift_by_rotation
}

/// ★★ ex01_learned — BERT and GPT-2 learn their position table instead of
/// fixing it. Two regions: ex01_learned_new and ex01_learned_forward. Same
/// interface as `TokenAndPosition`; the table is a trained variable `pos` of
/// shape [cfg.max_len, cfg.d_model], so it is saved and optimised.
#[derive(Debug)]
pub struct LearnedPositions {
    pub emb: nn::Embedding,
    /// [max_len, d_model], a variable of the VarStore.
    pub pos: Tensor,
    pub d_model: i64,
    pub dropout: f64,
}

impl LearnedPositions {
    pub fn new(p: nn::Path, vocab_size: i64, cfg: &TransformerConfig) -> Self {
        // ANCHOR: ex01_learned_new
        // HINT: the token half is exactly TokenAndPosition's embedding, with
        // HINT: its init and its zeroed PAD row: reuse it instead of rebuilding
        // HINT: it. The table must be a variable of the VarStore (see
        // HINT: nn::Path's methods), with a small normal init (GPT-2: std 0.01
        // HINT: for its position table, 0.02 for its tokens).
        let emb = TokenAndPosition::new(&p / "tok", vocab_size, cfg).emb;
        let init = nn::Init::Randn {
            mean: 0.0,
            stdev: 0.02,
        };
        let pos = p.var("pos", &[cfg.max_len, cfg.d_model], init);
        LearnedPositions {
            emb,
            pos,
            d_model: cfg.d_model,
            dropout: cfg.dropout,
        }
        // ANCHOR_END: ex01_learned_new
    }

    /// ids: [B, L] → [B, L, d_model]: token embedding × √d_model + pos[0..L],
    /// then dropout.
    pub fn forward(&self, ids: &Tensor, train: bool) -> Tensor {
        // ANCHOR: ex01_learned_forward
        // HINT: the same steps as TokenAndPosition::forward, with the first L
        // HINT: rows of self.pos as the table.
        let l = ids.size()[1];
        let tokens = ids.apply(&self.emb) * (self.d_model as f64).sqrt();
        (tokens + self.pos.narrow(0, 0, l)).dropout(self.dropout, train)
        // ANCHOR_END: ex01_learned_forward
    }
}
