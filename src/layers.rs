//! Building blocks every layer uses: Linear and LayerNorm made the course's
//! way, and a parameter counter.
use tch::nn;

use crate::config::Init;

// ANCHOR: xavier
/// Half-width of Glorot & Bengio's uniform distribution: weights drawn from
/// U(-a, a) with a = √(6 / (fan_in + fan_out)) keep the variance of activations
/// and of gradients roughly equal across a layer. tch has no `Init` for it.
pub fn xavier_uniform_bound(fan_in: i64, fan_out: i64) -> f64 {
    (6.0 / (fan_in + fan_out) as f64).sqrt()
}

/// A Linear layer initialised according to `init`. Every Linear of the model goes
/// through here: Rust decides the init at construction instead of walking the
/// modules afterwards.
pub fn linear(
    p: nn::Path,
    fan_in: i64,
    fan_out: i64,
    init: Init,
) -> nn::Linear {
    let torch_bound = 1.0 / (fan_in as f64).sqrt();
    let uniform = |a: f64| nn::Init::Uniform { lo: -a, up: a };
    let cfg = match init {
        Init::Paper => nn::LinearConfig {
            ws_init: uniform(xavier_uniform_bound(fan_in, fan_out)),
            bs_init: Some(nn::Init::Const(0.0)),
            bias: true,
        },
        // PyTorch's kaiming_uniform_(a=√5) works out to U(±1/√fan_in), bias too.
        Init::FrameworkDefault => nn::LinearConfig {
            ws_init: uniform(torch_bound),
            bs_init: Some(uniform(torch_bound)),
            bias: true,
        },
        Init::TchDefault => nn::LinearConfig::default(),
    };
    nn::linear(p, fan_in, fan_out, cfg)
}
// ANCHOR_END: xavier

// ANCHOR: layer_norm
/// LayerNorm over the last dimension: eps 1e-5, γ = 1 and β = 0 at the start, the
/// same defaults as PyTorch's nn.LayerNorm.
pub fn layer_norm(p: nn::Path, d_model: i64) -> nn::LayerNorm {
    nn::layer_norm(p, vec![d_model], Default::default())
}
// ANCHOR_END: layer_norm

/// Number of trainable scalars in a VarStore (the position tables are not
/// variables).
#[counted::counted]
pub fn parameter_count(vs: &nn::VarStore) -> i64 {
    vs.trainable_variables()
        .iter()
        .map(|t| t.numel() as i64)
        .sum()
}
