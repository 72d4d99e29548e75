//! Chapter 01 exercises — the input layer. Check with `cargo test --test exercises_ch01`.
use tch::{nn, Device, Kind, Tensor};

use crate::embedding::{Init, TokenAndPosition};

/// ★ ex01_table_by_loops — the sinusoidal table again, with two plain loops and no tensor
/// arithmetic, so that every entry is visibly the paper's formula.
/// Returns [max_len, d_model] (f32), equal to `sinusoidal_position_encoding`.
pub fn position_table_by_loops(max_len: i64, d_model: i64) -> Tensor {
    // ANCHOR: ex01_table_by_loops
    // HINT: for position pos and pair i (0 ≤ i < d_model/2) the angle is pos / 10000^(2i / d_model);
    // HINT: column 2i holds sin(angle), column 2i+1 holds cos(angle). Fill a Vec<f32> row by row,
    // HINT: then Tensor::from_slice(&values).view([max_len, d_model]).
    let mut values = Vec::with_capacity((max_len * d_model) as usize);
    for pos in 0..max_len {
        for i in 0..d_model / 2 {
            let angle = pos as f64 / 10000f64.powf(2.0 * i as f64 / d_model as f64);
            values.push(angle.sin() as f32);
            values.push(angle.cos() as f32);
        }
    }
    Tensor::from_slice(&values).view([max_len, d_model])
    // ANCHOR_END: ex01_table_by_loops
}

/// ★★ ex01_shift_by_rotation — why the table lets attention find relative offsets:
/// pe[p + k] is pe[p] with each (sin, cos) pair rotated by an angle that depends on k
/// and on the pair's frequency, but not on p. Given one row `row` = pe[p] ([d_model])
/// and an offset `k`, return pe[p + k] without knowing p.
pub fn shift_position_row(row: &Tensor, k: i64) -> Tensor {
    // ANCHOR: ex01_shift_by_rotation
    // HINT: pair i has frequency ω_i = 10000^(−2i/d). With a = p·ω_i:
    // HINT: sin(a + kω) = sin a·cos kω + cos a·sin kω,   cos(a + kω) = cos a·cos kω − sin a·sin kω.
    // HINT: row.view([d/2, 2]) puts the sin of each pair in column 0 and the cos in column 1.
    let d = row.size()[0];
    let pairs = row.view([d / 2, 2]);
    let (sin_a, cos_a) = (pairs.select(1, 0), pairs.select(1, 1));
    let omega = (Tensor::arange_start_step(0, d, 2, (Kind::Double, row.device())) * (-(10000f64.ln()) / d as f64)).exp();
    let (sin_k, cos_k) = ((&omega * k as f64).sin().to_kind(row.kind()), (omega * k as f64).cos().to_kind(row.kind()));
    let sin_ak = &sin_a * &cos_k + &cos_a * &sin_k;
    let cos_ak = cos_a * cos_k - sin_a * sin_k;
    Tensor::stack(&[sin_ak, cos_ak], 1).view([d])
    // ANCHOR_END: ex01_shift_by_rotation
}

/// ★★ ex01_learned_new / ex01_learned_forward — BERT and GPT-2 learn their position
/// table instead of fixing it. Same interface as `TokenAndPosition`; the table is a
/// trained variable `pos` of shape [max_len, d_model], so it is saved and optimised.
#[derive(Debug)]
pub struct LearnedPositions {
    pub emb: nn::Embedding,
    /// [max_len, d_model], a variable of the VarStore.
    pub pos: Tensor,
    pub d_model: i64,
    pub dropout: f64,
}

impl LearnedPositions {
    pub fn new(p: nn::Path, vocab_size: i64, d_model: i64, max_len: i64, dropout: f64, init: Init) -> Self {
        // ANCHOR: ex01_learned_new
        // HINT: the token embedding is the one TokenAndPosition::new builds (init and PAD row included):
        // HINT: build one under `p` and keep its `emb`. The table is p.var("pos", &[max_len, d_model], ..)
        // HINT: with a small normal init (GPT-2 uses std 0.02).
        let emb = TokenAndPosition::new(&p / "tok", vocab_size, d_model, max_len, dropout, init).emb;
        let pos = p.var("pos", &[max_len, d_model], nn::Init::Randn { mean: 0.0, stdev: 0.02 });
        LearnedPositions { emb, pos, d_model, dropout }
        // ANCHOR_END: ex01_learned_new
    }

    /// ids: [B, L] → [B, L, d_model]: token embedding × √d_model + pos[0..L], then dropout.
    pub fn forward(&self, ids: &Tensor, train: bool) -> Tensor {
        // ANCHOR: ex01_learned_forward
        // HINT: the same three steps as TokenAndPosition::forward, with self.pos.narrow(0, 0, L) as the table.
        let l = ids.size()[1];
        let tokens = ids.apply(&self.emb) * (self.d_model as f64).sqrt();
        (tokens + self.pos.narrow(0, 0, l)).dropout(self.dropout, train)
        // ANCHOR_END: ex01_learned_forward
    }
}
