//! What each piece buys: the course's Transformer with one piece taken out or
//! changed at a time, trained and measured (`scripts/ablation.rs`, the book's
//! page "What each piece buys").
//!
//! The seam is this module, and only this module. The lesson's listings stay as
//! they are: [`Ablated`] holds the lesson's own [`Transformer`], built by
//! `Transformer::new` with the same parameter names, and wires the lesson's own
//! pieces (`TokenAndPosition`, `MultiHeadAttention`, `FeedForward`, the
//! LayerNorms, the masks, `scaled_dot_product`) the way its [`Switches`] say.
//! With every switch at its default it computes what the lesson computes, bit
//! for bit, in training as in inference (`tests/ablation.rs` checks logits,
//! greedy decoding and trained weights against the lesson's `Transformer`,
//! `greedy_decode` and `Trainer`). Training is the lesson's too: an
//! [`AblatedTrainer`] holds chapter 09's `Trainer` of an `Ablated` model and
//! steps by its `train_step`; only the schedule (`lr_at`) has a switch.
use std::time::Instant;

use anyhow::{ensure, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{nn, Device, Kind, Tensor};

use transformer_course::attention::{scaled_dot_product, MultiHeadAttention};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::data::{epoch_batches, row, ReverseDataset};
use transformer_course::embedding::TokenAndPosition;
use transformer_course::generate::row_is_right;
use transformer_course::train::{
    noam_lr, reverse_data, test_data, Seq2Seq, TrainOptions, Trainer,
    TEST_SAMPLES,
};
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, make_target_mask, Transformer,
};
use transformer_course::vocab::{BOS_ID, EOS_ID, PAD_ID, SEQ_LEN};

use crate::optim::{adam, AdamKind};

/// Where the model learns about order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// The lesson's fixed sinusoidal table (chapter 01).
    Sinusoidal,
    /// Nothing: tokens only. Attention cannot tell one position from another.
    None,
    /// A trained table per embedding, [max_len, d_model], as BERT and GPT-2 do.
    Learned,
}

/// Where the LayerNorms sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// The lesson's x + Sublayer(LN(x)), with a final LN on each stack.
    Pre,
    /// The 2017 paper's LN(x + Sublayer(x)); no final LN (the last layer's
    /// output is already normalised).
    Post,
    /// No LayerNorm anywhere, the final ones included.
    None,
}

// ANCHOR: switches
/// One setting per piece the course builds. `Switches::COURSE` is the lesson.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Switches {
    pub position: Position,
    /// Divide the scores by √d_k (chapter 02).
    pub scale: bool,
    /// Add each sublayer's output to its input (chapter 04).
    pub residual: bool,
    pub norm: Norm,
    /// The decoder may not look at later target tokens (chapter 06).
    pub causal_mask: bool,
    /// No query looks at a PAD key, in any attention (chapter 06).
    pub padding_mask: bool,
    /// The learning rate rises for `warmup` steps (chapter 09). Without it, the
    /// rate starts at the same peak and decays from there as before.
    pub warmup: bool,
    /// How the two embedding tables start: `Init::Paper` is N(0, 1/d_model),
    /// `Init::FrameworkDefault` N(0, 1); PAD rows zero either way.
    pub embedding_init: Init,
    /// How every Linear starts: `Init::Paper` is Xavier with zero biases,
    /// `Init::FrameworkDefault` PyTorch's U(±1/√fan_in).
    pub linear_init: Init,
}

impl Switches {
    /// The course's model and recipe, every piece in.
    pub const COURSE: Switches = Switches {
        position: Position::Sinusoidal,
        scale: true,
        residual: true,
        norm: Norm::Pre,
        causal_mask: true,
        padding_mask: true,
        warmup: true,
        embedding_init: Init::Paper,
        linear_init: Init::Paper,
    };
}
// ANCHOR_END: switches

/// A row of the study: a name, what it changes, and the model and recipe.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    pub name: &'static str,
    /// What differs from the course, in a few words.
    pub change: &'static str,
    /// The chapter whose piece this takes out.
    pub chapter: &'static str,
    pub switches: Switches,
    /// Heads and dropout, where the variant changes the config's.
    pub num_heads: Option<i64>,
    pub dropout: Option<f64>,
}

const fn variant(
    name: &'static str,
    change: &'static str,
    chapter: &'static str,
    switches: Switches,
) -> Variant {
    Variant {
        name,
        change,
        chapter,
        switches,
        num_heads: None,
        dropout: None,
    }
}

const C: Switches = Switches::COURSE;

/// Every row of the study, the course's model first.
pub const VARIANTS: [Variant; 16] = [
    variant("course", "the course's model and recipe", "09", C),
    variant(
        "no-position",
        "no position encoding",
        "01",
        Switches {
            position: Position::None,
            ..C
        },
    ),
    variant(
        "learned-position",
        "a trained position table",
        "01",
        Switches {
            position: Position::Learned,
            ..C
        },
    ),
    variant(
        "no-scale",
        "scores not divided by √d_k",
        "02",
        Switches { scale: false, ..C },
    ),
    Variant {
        num_heads: Some(1),
        ..variant("one-head", "1 head of 128, not 4 of 32", "02", C)
    },
    variant(
        "no-residual",
        "no residual connections",
        "04",
        Switches {
            residual: false,
            ..C
        },
    ),
    variant(
        "no-layernorm",
        "no LayerNorm at all",
        "04",
        Switches {
            norm: Norm::None,
            ..C
        },
    ),
    variant(
        "post-norm",
        "LN(x + f(x)), no final LN",
        "04",
        Switches {
            norm: Norm::Post,
            ..C
        },
    ),
    // Chapter 04's prediction is about Post-Norm *without* warmup; the row above
    // keeps it, so only this row, against that one, tests the prediction.
    variant(
        "post-norm-no-warmup",
        "Post-Norm, peak rate from step 1",
        "04",
        Switches {
            norm: Norm::Post,
            warmup: false,
            ..C
        },
    ),
    variant(
        "no-causal-mask",
        "decoder sees later targets",
        "06",
        Switches {
            causal_mask: false,
            ..C
        },
    ),
    variant(
        "no-padding-mask",
        "PAD keys not masked",
        "06",
        Switches {
            padding_mask: false,
            ..C
        },
    ),
    variant(
        "no-warmup",
        "peak rate from step 1",
        "09",
        Switches { warmup: false, ..C },
    ),
    Variant {
        dropout: Some(0.0),
        ..variant("no-dropout", "dropout 0, not 0.1", "09", C)
    },
    variant(
        "init-emb-default",
        "embedding N(0,1), Linear Xavier",
        "09",
        Switches {
            embedding_init: Init::FrameworkDefault,
            ..C
        },
    ),
    variant(
        "init-linear-default",
        "embedding N(0,1/d), Linear U(±1/√n)",
        "09",
        Switches {
            linear_init: Init::FrameworkDefault,
            ..C
        },
    ),
    variant(
        "init-both-default",
        "chapter 09's framework-default",
        "09",
        Switches {
            embedding_init: Init::FrameworkDefault,
            linear_init: Init::FrameworkDefault,
            ..C
        },
    ),
];

/// The variant called `name`.
pub fn variant_named(name: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.name == name)
}

impl Variant {
    /// The run this variant is compared with, seed for seed: the course's model,
    /// but for Post-Norm without warmup, Post-Norm with it (the one change that
    /// chapter 04's prediction is about).
    pub fn reference(&self) -> &'static str {
        match self.name {
            "post-norm-no-warmup" => "post-norm",
            _ => "course",
        }
    }

    /// The course's config with this variant's heads, dropout and Linear init.
    pub fn config(&self) -> TransformerConfig {
        self.on(TransformerConfig::reverse_task())
    }

    /// `base` with this variant's heads, dropout and Linear init.
    pub fn on(&self, base: TransformerConfig) -> TransformerConfig {
        TransformerConfig {
            num_heads: self.num_heads.unwrap_or(base.num_heads),
            dropout: self.dropout.unwrap_or(base.dropout),
            init: self.switches.linear_init,
            ..base
        }
    }
}

/// The lesson's `Transformer`, wired as its `Switches` say.
pub struct Ablated {
    pub model: Transformer,
    pub switches: Switches,
    /// The trained position tables of `Position::Learned`: (encoder, decoder),
    /// each [max_len, d_model].
    learned: Option<(Tensor, Tensor)>,
}

impl Ablated {
    /// Builds the lesson's model under `vs` with `config`, then what the
    /// switches add: trained position tables, and the embedding init when it
    /// differs from the one `config.init` gave.
    pub fn new(
        vs: &nn::VarStore,
        config: TransformerConfig,
        switches: Switches,
    ) -> Result<Self> {
        ensure!(
            config.init == switches.linear_init,
            "the config's init ({}) must be the switches' Linear init ({})",
            config.init.name(),
            switches.linear_init.name()
        );
        let model = Transformer::new(vs.root(), config)?;
        let given = match config.init {
            Init::Paper => Init::Paper,
            _ => Init::FrameworkDefault,
        };
        if switches.embedding_init != given {
            let std = match switches.embedding_init {
                Init::Paper => (config.d_model as f64).powf(-0.5),
                _ => 1.0,
            };
            for e in [&model.encoder.embed, &model.decoder.embed] {
                tch::no_grad(|| {
                    let mut w = e.emb.ws.shallow_clone();
                    let fresh =
                        Tensor::randn(w.size(), (Kind::Float, w.device()));
                    w.copy_(&(fresh * std));
                    let _ = w.get(PAD_ID).zero_();
                });
            }
        }
        let learned = (switches.position == Position::Learned).then(|| {
            let shape = [config.max_len, config.d_model];
            // The scale of the sinusoidal table it replaces: sin² and cos²
            // average ½.
            let init = nn::Init::Randn {
                mean: 0.0,
                stdev: 0.5f64.sqrt(),
            };
            let table = |stack: &str| {
                (vs.root() / stack / "embed").var("learned_pe", &shape, init)
            };
            (table("encoder"), table("decoder"))
        });
        Ok(Ablated {
            model,
            switches,
            learned,
        })
    }

    fn dropout(&self) -> f64 {
        self.model.config.dropout
    }

    /// Token embedding × √d plus the position signal the switches choose.
    fn embed(
        &self,
        e: &TokenAndPosition,
        table: Option<&Tensor>,
        ids: &Tensor,
        train: bool,
    ) -> Tensor {
        if self.switches.position == Position::Sinusoidal {
            return e.forward(ids, train); // the lesson's own
        }
        let scale = (self.model.config.d_model as f64).sqrt();
        let tokens = ids.apply(&e.emb) * scale; // [B, L, d]
        let x = match table {
            Some(t) => tokens + t.narrow(0, 0, ids.size()[1]),
            None => tokens,
        };
        x.dropout(self.dropout(), train)
    }

    // ANCHOR: sublayer
    /// One sublayer `f` with its LayerNorm `ln`, residual and dropout, as the
    /// switches place them. Pre with a residual is the lesson's
    /// x + dropout(f(LN(x))), the same operations in the same order.
    fn sublayer(
        &self,
        x: &Tensor,
        ln: &nn::LayerNorm,
        f: impl FnOnce(&Tensor) -> Tensor,
        train: bool,
    ) -> Tensor {
        let p = self.dropout();
        let add = |a: Tensor| if self.switches.residual { x + a } else { a };
        match self.switches.norm {
            Norm::Pre => add(f(&x.apply(ln)).dropout(p, train)),
            Norm::None => add(f(x).dropout(p, train)),
            Norm::Post => add(f(x).dropout(p, train)).apply(ln),
        }
    }
    // ANCHOR_END: sublayer

    /// The final LayerNorm of a stack, where Pre-Norm has one.
    fn close(&self, x: Tensor, ln: &nn::LayerNorm) -> Tensor {
        match self.switches.norm {
            Norm::Pre => x.apply(ln),
            Norm::Post | Norm::None => x,
        }
    }

    /// Attention of the lesson's `mha`: its output and weights. Without the
    /// scale, Q is multiplied by √d_k before `scaled_dot_product` divides by it
    /// again.
    fn attend(
        &self,
        mha: &MultiHeadAttention,
        q: &Tensor,
        kv: &Tensor,
        mask: Option<&Tensor>,
        train: bool,
    ) -> (Tensor, Tensor) {
        if self.switches.scale {
            return mha.forward(q, kv, kv, mask, train);
        }
        let d_k = mha.d_k as f64;
        let q = mha.project(q, &mha.W_q) * d_k.sqrt(); // [B, h, Lq, d_k]
        let k = mha.project(kv, &mha.W_k);
        let v = mha.project(kv, &mha.W_v);
        let (out, weights) =
            scaled_dot_product(&q, &k, &v, mask, self.dropout(), train);
        (mha.merge(&out).apply(&mha.W_o), weights) // [B, Lq, d]
    }

    // ANCHOR: encode
    /// src: [B, Ls] → (memory [B, Ls, d], the source's PAD mask if any)
    pub fn encode(
        &self,
        src: &Tensor,
        train: bool,
    ) -> (Tensor, Option<Tensor>) {
        let src_mask =
            self.switches.padding_mask.then(|| make_padding_mask(src));
        let enc = &self.model.encoder;
        let table = self.learned.as_ref().map(|t| &t.0);
        let mut x = self.embed(&enc.embed, table, src, train);
        for layer in &enc.layers {
            let m = src_mask.as_ref();
            let attn = |h: &Tensor| self.attend(&layer.mha, h, h, m, train).0;
            x = self.sublayer(&x, &layer.ln1, attn, train);
            x = self.sublayer(&x, &layer.ln2, |h| layer.ffn.forward(h), train);
        }
        (self.close(x, &enc.ln_final), src_mask)
    }
    // ANCHOR_END: encode

    /// The decoder's self-attention mask: the lesson's `make_target_mask` when
    /// both masks are on, else what is left of it.
    fn target_mask(&self, tgt_in: &Tensor) -> Option<Tensor> {
        let s = self.switches;
        let l = tgt_in.size()[1];
        match (s.causal_mask, s.padding_mask) {
            (true, true) => Some(make_target_mask(tgt_in)),
            (true, false) => Some(make_causal_mask(l, tgt_in.device())),
            (false, true) => Some(make_padding_mask(tgt_in)),
            (false, false) => None,
        }
    }

    /// tgt_in: [B, Lt] → logits [B, Lt, tgt_vocab]
    pub fn decode(
        &self,
        tgt_in: &Tensor,
        memory: &Tensor,
        src_mask: Option<&Tensor>,
        train: bool,
    ) -> Tensor {
        self.decode_with_cross(tgt_in, memory, src_mask, train).0
    }

    /// `decode` that also returns every layer's cross-attention weights,
    /// [B, h, Lt, Ls] each.
    pub fn decode_with_cross(
        &self,
        tgt_in: &Tensor,
        memory: &Tensor,
        src_mask: Option<&Tensor>,
        train: bool,
    ) -> (Tensor, Vec<Tensor>) {
        let tgt_mask = self.target_mask(tgt_in);
        let dec = &self.model.decoder;
        let table = self.learned.as_ref().map(|t| &t.1);
        let mut x = self.embed(&dec.embed, table, tgt_in, train);
        let mut weights = Vec::with_capacity(dec.layers.len());
        for layer in &dec.layers {
            let m = tgt_mask.as_ref();
            let mha = &layer.self_mha;
            let attn = |h: &Tensor| self.attend(mha, h, h, m, train).0;
            x = self.sublayer(&x, &layer.ln1, attn, train);
            let cross = |h: &Tensor| {
                let (a, w) =
                    self.attend(&layer.cross_mha, h, memory, src_mask, train);
                weights.push(w);
                a
            };
            x = self.sublayer(&x, &layer.ln2, cross, train);
            x = self.sublayer(&x, &layer.ln3, |h| layer.ffn.forward(h), train);
        }
        let logits = self.close(x, &dec.ln_final).apply(&self.model.out_proj);
        (logits, weights)
    }

    /// src: [B, Ls], tgt_in: [B, Lt] → logits [B, Lt, tgt_vocab]
    pub fn forward(
        &self,
        src: &Tensor,
        tgt_in: &Tensor,
        train: bool,
    ) -> Tensor {
        let (memory, src_mask) = self.encode(src, train);
        self.decode(tgt_in, &memory, src_mask.as_ref(), train)
    }

    /// Greedy decoding as chapter 10 does it (`generate::greedy_decode`), through
    /// this wiring: src [B, Ls] → [B, ≤ SEQ_LEN].
    pub fn greedy(&self, src: &Tensor) -> Tensor {
        tch::no_grad(|| {
            let (memory, src_mask) = self.encode(src, false);
            let (b, device) = (src.size()[0], src.device());
            let mut out = Tensor::full([b, 1], BOS_ID, (Kind::Int64, device));
            let mut done = Tensor::zeros([b], (Kind::Bool, device));
            while (out.size()[1] as usize) < SEQ_LEN {
                let logits =
                    self.decode(&out, &memory, src_mask.as_ref(), false);
                let next = logits.select(1, -1).argmax(-1, false);
                let next = next.masked_fill(&done, PAD_ID); // [B]
                out = Tensor::cat(&[out, next.unsqueeze(1)], 1);
                done = done.logical_or(&next.eq(EOS_ID));
                if done.all().int64_value(&[]) != 0 {
                    break;
                }
            }
            out
        })
    }

    /// For every row of `data`, whether greedy decoding gets it exactly right;
    /// `batch` rows at a time.
    pub fn correct_rows(&self, data: &ReverseDataset, batch: i64) -> Vec<bool> {
        let n = data.len() as i64;
        let mut right = Vec::with_capacity(n as usize);
        for start in (0..n).step_by(batch as usize) {
            let len = batch.min(n - start);
            let src = data
                .src
                .narrow(0, start, len)
                .to_device(self.model.device());
            let pred = self.greedy(&src).to_device(Device::Cpu);
            right.extend((0..len).map(|i| {
                row_is_right(&row(&pred, i), &row(&data.tgt, start + i))
            }));
        }
        right
    }
}

/// How long each run trains and how it is watched.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Epochs over the course's 20,000 training samples (312 steps each).
    pub epochs: usize,
    /// Fewer steps than the epochs give, for a quick check.
    pub max_steps: Option<usize>,
    /// Validation exact match is checked every this many steps …
    pub check_every: usize,
    /// … on the first this many validation samples.
    pub check_samples: usize,
    /// The rate that counts as learned.
    pub target: f64,
}

impl Run {
    /// Test rows right.
    pub fn right(&self) -> usize {
        self.test_rows.iter().filter(|&&r| r).count()
    }
}

/// The study's epochs per run (624 steps): about 55 minutes for all 48 runs on two
/// CPU cores.
pub const STUDY_EPOCHS: usize = 2;

impl Budget {
    /// The study's budget for `epochs` epochs, checked every 50 steps on 200
    /// validation samples; `quick`: 20 steps, checked every 10 on 100, a check
    /// that everything runs, not a measurement.
    pub fn study(epochs: usize, quick: bool) -> Budget {
        Budget {
            epochs: if quick { 1 } else { epochs },
            max_steps: quick.then_some(20),
            check_every: if quick { 10 } else { 50 },
            check_samples: if quick { 100 } else { 200 },
            target: 0.9,
        }
    }

    /// Steps a run takes with `n` training samples in batches of `batch`.
    pub fn steps(&self, n: usize, batch: usize) -> usize {
        let all = self.epochs * (n / batch);
        self.max_steps.map_or(all, |m| m.min(all))
    }
}

/// The data every run of the study shares: chapter 09's recipe, its training
/// and validation sets, and chapter 10's test set (its first 100 rows when
/// `quick`).
pub fn study_data(quick: bool) -> (TrainOptions, [ReverseDataset; 3]) {
    let opts = TrainOptions::default();
    let (train, val) = reverse_data(&opts);
    let n_test = if quick { 100 } else { TEST_SAMPLES };
    let test = test_data(&opts, &train, &val, n_test);
    (opts, [train, val, test])
}

/// What one run of one variant left.
#[derive(Debug, Clone)]
pub struct Run {
    pub variant: &'static str,
    pub seed: u64,
    pub steps: usize,
    /// The loss of every step.
    pub losses: Vec<f64>,
    /// (step, validation exact match) at every check.
    pub checks: Vec<(usize, f64)>,
    /// The first check at or above the budget's target.
    pub steps_to_target: Option<usize>,
    /// For every test row, whether greedy decoding got it right.
    pub test_rows: Vec<bool>,
    /// Wall time of training and testing.
    pub seconds: f64,
}

/// Chapter 09's trainer over an `Ablated` model, on the study's schedule. The
/// step is the lesson's `Trainer::train_step`, not a copy, so that a change to
/// the lesson's step reaches every row of the study; the switches live in the
/// model and in `lr_at`, nowhere else.
pub struct AblatedTrainer {
    pub trainer: Trainer<Ablated>,
}

impl Seq2Seq for Ablated {
    fn forward(&self, src: &Tensor, tgt_in: &Tensor, train: bool) -> Tensor {
        Ablated::forward(self, src, tgt_in, train) // the inherent one
    }
}

impl AblatedTrainer {
    /// Seeds as `Trainer::new` does, so that the course's variant starts from the
    /// very weights chapter 09 starts from.
    pub fn new(
        v: &Variant,
        config: TransformerConfig,
        device: Device,
        opts: &TrainOptions,
        optimizer: AdamKind,
    ) -> Result<Self> {
        tch::manual_seed(opts.seed as i64);
        let vs = nn::VarStore::new(device);
        let model = Ablated::new(&vs, v.on(config), v.switches)?;
        let opt = adam(optimizer, &vs)?;
        let trainer = Trainer {
            vs,
            model,
            opt,
            step: 0,
            warmup: opts.warmup,
            label_smoothing: opts.label_smoothing,
        };
        Ok(AblatedTrainer { trainer })
    }

    // ANCHOR: lr_at
    /// The rate of step `step`: chapter 09's schedule, or without warmup its
    /// peak until the decay begins.
    pub fn lr_at(&self, step: usize) -> f64 {
        let t = &self.trainer;
        let d = t.model.model.config.d_model;
        let step = if t.model.switches.warmup {
            step
        } else {
            step.max(t.warmup)
        };
        noam_lr(step, d, t.warmup)
    }
    // ANCHOR_END: lr_at

    /// One step on src [B, S], tgt [B, T], at the study's rate; returns the
    /// loss.
    pub fn learn(&mut self, src: &Tensor, tgt: &Tensor) -> f64 {
        let step = self.trainer.step + 1;
        let lr = self.lr_at(step);
        self.trainer.step = step;
        self.trainer.opt.set_lr(lr);
        let (loss, _) = self.trainer.train_step(src, tgt);
        loss.double_value(&[])
    }
}

/// Trains `v` with `opts.seed` on `train` for the budget, checking exact match
/// on `val` as it goes, then scores it on `test`. Returns the run and the
/// trained model.
pub fn run_variant(
    v: &Variant,
    opts: &TrainOptions,
    budget: &Budget,
    (train, val, test): (&ReverseDataset, &ReverseDataset, &ReverseDataset),
    device: Device,
    mut on_step: impl FnMut(usize, usize),
) -> Result<(Run, AblatedTrainer)> {
    let start = Instant::now();
    let config = TransformerConfig::reverse_task();
    let mut t = AblatedTrainer::new(v, config, device, opts, AdamKind::Fused)?;
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed); // fit's batch order
    let quick = val.first(budget.check_samples);
    let total = budget.steps(train.len(), opts.batch_size);
    let (mut losses, mut checks) = (Vec::with_capacity(total), Vec::new());
    for _ in 0..budget.epochs {
        for idx in epoch_batches(train.len(), opts.batch_size, &mut rng) {
            if t.trainer.step == total {
                break;
            }
            let src = train.src.index_select(0, &idx).to_device(device);
            let tgt = train.tgt.index_select(0, &idx).to_device(device);
            losses.push(t.learn(&src, &tgt));
            let step = t.trainer.step;
            if step % budget.check_every == 0 || step == total {
                let model = &t.trainer.model;
                let right = model.correct_rows(&quick, opts.eval_batch);
                let rate = right.iter().filter(|&&r| r).count() as f64
                    / right.len() as f64;
                checks.push((step, rate));
            }
            on_step(step, total);
        }
    }
    let steps_to_target =
        checks.iter().find(|c| c.1 >= budget.target).map(|c| c.0);
    let run = Run {
        variant: v.name,
        seed: opts.seed,
        steps: t.trainer.step,
        losses,
        checks,
        steps_to_target,
        test_rows: t.trainer.model.correct_rows(test, opts.eval_batch),
        seconds: start.elapsed().as_secs_f64(),
    };
    Ok((run, t))
}
