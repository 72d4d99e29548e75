// Wrong solutions of ex09_label_smoothing.

// MUTANT: pad_rows_counted — averages over every row, PAD included
    let logp = logits.log_softmax(-1, Kind::Float);
    let nll = -logp.gather(1, &labels.unsqueeze(1), false).squeeze_dim(1);
    let uniform = -logp.mean_dim(-1, false, Kind::Float);
    (nll * (1.0 - eps) + uniform * eps).mean(Kind::Float)

// MUTANT: others_only — spreads ε over the V − 1 other classes (the label gets 1 − ε)
    let logp = logits.log_softmax(-1, Kind::Float);
    let v = logp.size()[1] as f64;
    let picked = logp.gather(1, &labels.unsqueeze(1), false).squeeze_dim(1);
    let total = logp.sum_dim_intlist(-1, false, Kind::Float);
    let others = -(total - &picked) / (v - 1.0);
    let per_row = -picked * (1.0 - eps) + others * eps;
    per_row.masked_select(&labels.ne(PAD_ID)).mean(Kind::Float)

// MUTANT: own_kind — log_softmax in the logits' own kind: bf16 keeps 2–3 digits
    let logp = logits.log_softmax(-1, None::<Kind>);
    let nll = -logp.gather(1, &labels.unsqueeze(1), false).squeeze_dim(1);
    let uniform = -logp.mean_dim(-1, false, None::<Kind>);
    let per_row = nll * (1.0 - eps) + uniform * eps;
    per_row.masked_select(&labels.ne(PAD_ID)).mean(Kind::Float)

// MUTANT: detached — computes the number in f64 and returns a fresh tensor: no gradient
    let logp = logits.log_softmax(-1, Kind::Float);
    let nll = -logp.gather(1, &labels.unsqueeze(1), false).squeeze_dim(1);
    let uniform = -logp.mean_dim(-1, false, Kind::Float);
    let per_row = nll * (1.0 - eps) + uniform * eps;
    let value = per_row.masked_select(&labels.ne(PAD_ID)).mean(Kind::Float).double_value(&[]);
    Tensor::from(value as f32)

// MUTANT: libtorch_smoothing — libtorch's built-in label smoothing: right number, exercise not done
    logits.to_kind(Kind::Float).cross_entropy_loss::<Tensor>(
        labels,
        None,
        tch::Reduction::Mean,
        PAD_ID,
        eps,
    )

// MUTANT: reexport_elsewhere — libtorch's smoothing, re-exported under another name from another exercise file
    crate::ch12_sdpa_bench::smoothed(&logits.view([1, -1, logits.size()[1]]), labels, eps)
// APPEND TO ch12_sdpa_bench.rs:
pub use transformer_course::train::masked_cross_entropy as smoothed;

// MUTANT: via_closure — libtorch's label smoothing called inside a closure
    let smooth = |l: &Tensor| {
        l.to_kind(Kind::Float)
            .cross_entropy_loss::<Tensor>(labels, None, tch::Reduction::Mean, PAD_ID, eps)
    };
    smooth(logits)

// MUTANT: via_module_path — libtorch's label smoothing through a helper module's path
    smooth_helpers::smooth(logits, labels, eps)
// APPEND:
mod smooth_helpers {
    use tch::{Kind, Reduction, Tensor};
    pub fn smooth(logits: &Tensor, labels: &Tensor, eps: f64) -> Tensor {
        let pad = transformer_course::vocab::PAD_ID;
        logits.to_kind(Kind::Float).cross_entropy_loss::<Tensor>(labels, None, Reduction::Mean, pad, eps)
    }
}

// MUTANT: via_reexport — the course's smoothed loss re-exported under another name by another exercise file
    crate::ch08_reverse_data::plain_loss(&logits.unsqueeze(0), &labels.unsqueeze(0), eps)
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::train::masked_cross_entropy as plain_loss;
