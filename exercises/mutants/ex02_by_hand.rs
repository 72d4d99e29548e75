// Wrong solutions of ex02_by_hand.

// MUTANT: neg_inf — masks with -inf: a fully masked row becomes NaN
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, f64::NEG_INFINITY);
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: divide_by_d_k — scales by 1/d_k instead of 1/√d_k
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / d_k as f64;
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: softmax_over_queries — normalises over dimension -2
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-2, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: transpose_dims_2_3 — k.transpose(2, 3): right for [B, h, L, d_k] only
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(2, 3)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: fill_minus_1e9 — masks with −1e9: fine in fp32, −inf in fp16
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, -1e9);
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: library_call — calls the course's attention: right numbers, exercise not done
    attention::scaled_dot_product(q, k, v, mask, 0.0, false)

// MUTANT: alias_outside — the course's attention under another name, imported at the end of the file
    let (out, weights) = sdp(q, k, v, mask, 0.0, false);
    (out, weights)
// APPEND:
use transformer_course::attention::scaled_dot_product as sdp;

// MUTANT: module_alias — the course's attention through an alias of its module
    at::scaled_dot_product(q, k, v, mask, 0.0, false)
// APPEND:
use transformer_course::attention as at;

// MUTANT: glob_in_a_module — a module of the file that glob-imports the course's attention
    course::scaled_dot_product(q, k, v, mask, 0.0, false)
// APPEND:
mod course {
    pub use transformer_course::attention::*;
}

// MUTANT: helper_outside — a helper function below the exercise calls the course's attention
    attend(q, k, v, mask)
// APPEND:
fn attend(q: &Tensor, k: &Tensor, v: &Tensor, m: Option<&Tensor>) -> (Tensor, Tensor) {
    attention::scaled_dot_product(q, k, v, m, 0.0, false)
}

// MUTANT: use_in_the_body — a module alias imported inside the function body
    use transformer_course::attention as lib;
    lib::scaled_dot_product(q, k, v, mask, 0.0, false)

// MUTANT: glob_in_the_body — a glob import inside the function body, which shadows the exercise's own name
    use transformer_course::attention::*;
    scaled_dot_product(q, k, v, mask, 0.0, false)

// MUTANT: via_closure — the course's attention called inside a closure
    let attend = |m| transformer_course::attention::scaled_dot_product(q, k, v, m, 0.0, false);
    attend(mask)

// MUTANT: via_module_path — the course's attention through a helper module's path
    attend_helpers::attend(q, k, v, mask)
// APPEND:
mod attend_helpers {
    use tch::Tensor;
    pub fn attend(q: &Tensor, k: &Tensor, v: &Tensor, m: Option<&Tensor>) -> (Tensor, Tensor) {
        transformer_course::attention::scaled_dot_product(q, k, v, m, 0.0, false)
    }
}

// MUTANT: via_reexport — the course's attention re-exported under another name by another exercise file
    crate::ch08_reverse_data::attend_all(q, k, v, mask, 0.0, false)
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::attention::scaled_dot_product as attend_all;
