//! Parity with an independent PyTorch implementation.
//!
//! Each case builds the Rust model, nudges every one of its variables away from its
//! initial value (so that LayerNorm gains, biases and the PAD embedding row are not the
//! constants 1 and 0 and a swapped or ignored parameter shows up), saves the VarStore as
//! safetensors, writes a padded batch next to it, and asks
//! `scripts/torch_reference.py logits` for PyTorch's logits on the same weights. The two
//! must agree to 1e-5 everywhere, padded positions included.
//!
//! The Python side needs `.venv` from `scripts/setup.sh`. Without it each case prints
//! "skipped: ..." and passes on a learner's machine; under CI (`CI=true`, which CI
//! services set and `.ci/run` exports) or with `PARITY_REQUIRE_TORCH=1`, a missing
//! PyTorch fails the test, so the parity claim can never pass unchecked there.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::transformer::Transformer;
use transformer_course::vocab::{BOS_ID as BOS, EOS_ID as EOS, PAD_ID};

mod common;

const TOLERANCE: f64 = 1e-5;

/// The venv's python if it can import torch and safetensors; otherwise why not.
fn python_with_torch() -> Result<PathBuf, String> {
    let python = common::repo_root().join(".venv/bin/python");
    if !python.exists() {
        return Err(format!(
            "{} does not exist (run scripts/setup.sh)",
            python.display()
        ));
    }
    let out = Command::new(&python)
        .args(["-c", "import torch, safetensors"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} cannot import torch and safetensors: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(python)
}

/// A fresh, unique scratch folder; removed again when the case passes.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "parity_pytorch-{}-{tag}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("parity: keeping {} for inspection", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Rows of `len` with `lengths[r]` leading non-PAD tokens drawn by `token(r, i)` and
/// PAD after them: [rows, len].
fn padded(
    lengths: &[i64],
    len: i64,
    token: impl Fn(usize, i64) -> i64,
) -> Tensor {
    let mut ids = Vec::with_capacity(lengths.len() * len as usize);
    for (r, &n) in lengths.iter().enumerate() {
        assert!(n <= len);
        ids.extend((0..len).map(|i| if i < n { token(r, i) } else { PAD_ID }));
    }
    Tensor::from_slice(&ids).view([lengths.len() as i64, len])
}

/// A batch shaped like the reversal task's, with padding on both sides:
/// src = digits, EOS, PAD…; tgt_in = BOS, tokens…, PAD…
fn batch(
    cfg: &TransformerConfig,
    src_lengths: &[i64],
    tgt_lengths: &[i64],
    ls: i64,
    lt: i64,
) -> (Tensor, Tensor) {
    assert_eq!(src_lengths.len(), tgt_lengths.len());
    // Tokens from the global generator (the caller holds common::global_rng() and has seeded it).
    let src_tok = Tensor::randint_low(
        3,
        cfg.src_vocab,
        [src_lengths.len() as i64, ls],
        (Kind::Int64, Device::Cpu),
    );
    let tgt_tok = Tensor::randint_low(
        3,
        cfg.tgt_vocab,
        [tgt_lengths.len() as i64, lt],
        (Kind::Int64, Device::Cpu),
    );
    let src = padded(src_lengths, ls, |r, i| {
        if i == src_lengths[r] - 1 {
            EOS
        } else {
            src_tok.int64_value(&[r as i64, i])
        }
    });
    let tgt_in = padded(tgt_lengths, lt, |r, i| {
        if i == 0 {
            BOS
        } else {
            tgt_tok.int64_value(&[r as i64, i])
        }
    });
    (src, tgt_in)
}

#[rstest]
#[case::reverse_task_seed_0(0, TransformerConfig::reverse_task(), &[14, 4, 9, 1, 12], &[13, 6, 1, 10, 3])]
#[case::reverse_task_seed_1234(1234, TransformerConfig::reverse_task(), &[6, 14, 2, 11], &[7, 2, 13, 12])]
#[case::d64_h8_three_layers(
    7,
    TransformerConfig { src_vocab: 17, tgt_vocab: 11, d_model: 64, num_heads: 8, d_ff: 192, num_layers: 3, max_len: 24, ..TransformerConfig::reverse_task() },
    &[20, 5, 13, 2, 17, 9],
    &[3, 18, 1, 11, 18, 7]
)]
fn rust_and_pytorch_logits_agree(
    #[case] seed: i64,
    #[case] config: TransformerConfig,
    #[case] src_lengths: &[i64],
    #[case] tgt_lengths: &[i64],
) {
    let python = match python_with_torch() {
        Ok(p) => p,
        Err(why) => {
            let why = format!("the PyTorch parity test needs the venv from scripts/setup.sh: {why}");
            common::skip_or_fail(&why, &["PARITY_REQUIRE_TORCH"], true);
            return;
        }
    };
    let config = TransformerConfig {
        dropout: 0.0,
        init: Init::Paper,
        ..config
    };
    let ls = *src_lengths.iter().max().unwrap();
    let lt = *tgt_lengths.iter().max().unwrap();
    let tag = format!(
        "seed{seed}-d{}-h{}-n{}",
        config.d_model, config.num_heads, config.num_layers
    );
    let dir = Scratch::new(&tag);

    // Build, perturb and save the model, and draw the batch, under one seed.
    let vs = nn::VarStore::new(Device::Cpu);
    let (model, src, tgt_in) = {
        let _guard = common::global_rng();
        tch::manual_seed(seed);
        let model = Transformer::new(vs.root(), config).expect("valid config");
        let mut names: Vec<_> = vs.variables().into_iter().collect();
        names.sort_by(|a, b| a.0.cmp(&b.0)); // HashMap order is random; draw in a fixed one
        tch::no_grad(|| {
            for (_, mut var) in names {
                let noise = var.randn_like() * 0.05;
                let _ = var.g_add_(&noise);
            }
        });
        let (src, tgt_in) = batch(&config, src_lengths, tgt_lengths, ls, lt);
        (model, src, tgt_in)
    };
    assert!(
        src.eq(PAD_ID).any().int64_value(&[]) == 1,
        "the batch must pad the source"
    );
    assert!(
        tgt_in.eq(PAD_ID).any().int64_value(&[]) == 1,
        "the batch must pad the target"
    );

    let weights = dir.path("weights.safetensors");
    let inputs = dir.path("inputs.safetensors");
    let out = dir.path("torch_logits.safetensors");
    vs.save(&weights).expect("save weights");
    Tensor::write_safetensors(&[("src", &src), ("tgt_in", &tgt_in)], &inputs)
        .expect("write inputs");

    let rust = tch::no_grad(|| model.forward(&src, &tgt_in, false));
    let torch =
        run_reference(&python, &weights, &inputs, &out, config.num_heads);

    assert_eq!(
        rust.size(),
        vec![src_lengths.len() as i64, lt, config.tgt_vocab]
    );
    assert_eq!(
        torch.size(),
        rust.size(),
        "PyTorch's logits have another shape"
    );
    let max_diff = (&rust - &torch).abs().max().double_value(&[]);
    let scale = rust.abs().max().double_value(&[]);
    let spread = rust.std(true).double_value(&[]);
    println!("parity {tag}: max|rust - torch| = {max_diff:.3e}  (max|logit| = {scale:.3}, std = {spread:.3})");
    // A degenerate model (all logits equal) would agree with anything.
    assert!(
        spread > 0.1,
        "logits barely vary (std {spread}); the comparison would prove nothing"
    );
    assert!(
        max_diff.is_finite() && max_diff < TOLERANCE,
        "Rust and PyTorch disagree: max|Δ| = {max_diff:.3e} ≥ {TOLERANCE:e}"
    );
}

fn run_reference(
    python: &Path,
    weights: &Path,
    inputs: &Path,
    out: &Path,
    heads: i64,
) -> Tensor {
    let script = common::repo_root().join("scripts/torch_reference.py");
    let result = Command::new(python)
        .current_dir(common::repo_root())
        .arg(&script)
        .arg("logits")
        .arg("--weights")
        .arg(weights)
        .arg("--inputs")
        .arg(inputs)
        .arg("--out")
        .arg(out)
        .arg("--heads")
        .arg(heads.to_string())
        .output()
        .expect("run scripts/torch_reference.py");
    assert!(
        result.status.success(),
        "torch_reference.py logits failed ({}):\n{}{}",
        result.status,
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    Tensor::read_safetensors(out)
        .expect("read PyTorch's logits")
        .into_iter()
        .find(|(name, _)| name == "logits")
        .map(|(_, t)| t)
        .expect("no tensor named 'logits' in PyTorch's output")
}
