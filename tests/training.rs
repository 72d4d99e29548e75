//! Chapter 09–10 mechanics: the schedule, the shift, the loss, decoding and checkpoints.
use rstest::rstest;
use tch::{nn, Device, Kind, Tensor};
use transformer_course::data::{make_dataset, EOS_ID, PAD_ID, SEQ_LEN};
use transformer_course::decode::{exact_match, greedy_decode};
use transformer_course::embedding::Init;
use transformer_course::train::{
    load_checkpoint, masked_cross_entropy, noam_lr, save_checkpoint, teacher_forcing, token_accuracy, Trainer,
};
use transformer_course::transformer::{Transformer, TransformerConfig};

fn tiny() -> TransformerConfig {
    TransformerConfig { d_model: 32, num_heads: 4, dff: 64, num_layers: 1, ..TransformerConfig::reverse_task() }
}

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("course-training-{}-{name}", std::process::id()));
    // Start empty: a folder left by an earlier run under the same process id would
    // otherwise confuse the atomicity check.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("model.safetensors")
}

#[rstest]
#[case::peak_at_warmup(1000, "2.80e-3")]
#[case::after_epoch_1(313, "8.75e-4")] // 312 steps done: the lr the next step uses
#[case::after_epoch_2(625, "1.75e-3")]
#[case::after_epoch_3(937, "2.62e-3")]
#[case::after_epoch_4(1249, "2.50e-3")]
#[case::after_epoch_10(3121, "1.58e-3")]
fn warmup_schedule_matches_the_source_chapter(#[case] step: usize, #[case] printed: &str) {
    assert_eq!(format!("{:.2e}", noam_lr(step, 128, 1000)), printed);
}

#[test]
fn schedule_rises_then_falls() {
    let lr: Vec<f64> = (1..=3000).map(|s| noam_lr(s, 128, 1000)).collect();
    let peak = lr.iter().cloned().fold(f64::MIN, f64::max);
    assert_eq!(lr.iter().position(|&v| v == peak), Some(999), "peak must be at step 1000");
    assert!(lr[..999].windows(2).all(|w| w[0] < w[1]));
    assert!(lr[999..].windows(2).all(|w| w[0] > w[1]));
    assert!((peak - (128.0f64 * 1000.0).powf(-0.5)).abs() < 1e-12);
}

#[test]
fn teacher_forcing_shifts_by_one() {
    let tgt = Tensor::from_slice(&[1i64, 8, 12, 3, 2, 0]).view([1, 6]);
    let (tgt_in, tgt_out) = teacher_forcing(&tgt);
    assert_eq!(Vec::<i64>::try_from(&tgt_in.view([-1])).unwrap(), vec![1, 8, 12, 3, 2]);
    assert_eq!(Vec::<i64>::try_from(&tgt_out.view([-1])).unwrap(), vec![8, 12, 3, 2, 0]);
}

#[test]
fn loss_ignores_pad_labels() {
    tch::manual_seed(0);
    let logits = Tensor::randn([2, 4, 13], (Kind::Float, Device::Cpu));
    let labels = Tensor::from_slice(&[5i64, 6, PAD_ID, PAD_ID, 7, PAD_ID, PAD_ID, PAD_ID]).view([2, 4]);
    let loss = masked_cross_entropy(&logits, &labels, 0.0).double_value(&[]);
    // Closed form over the three real labels only.
    let logp = logits.log_softmax(-1, Kind::Float);
    let manual = -(logp.double_value(&[0, 0, 5]) + logp.double_value(&[0, 1, 6]) + logp.double_value(&[1, 0, 7])) / 3.0;
    assert!((loss - manual).abs() < 1e-5, "{loss} vs {manual}");
    // Whatever the model says at PAD positions does not matter.
    let noisy = logits.copy();
    let _ = noisy.narrow(1, 2, 2).fill_(100.0);
    let _ = noisy.get(1).fill_(-3.0);
    let _ = noisy.get(1).get(0).copy_(&logits.get(1).get(0));
    assert!((masked_cross_entropy(&noisy, &labels, 0.0).double_value(&[]) - loss).abs() < 1e-5);
}

#[test]
fn token_accuracy_counts_only_real_labels() {
    let labels = Tensor::from_slice(&[3i64, 4, PAD_ID]).view([1, 3]);
    // argmax: 3 (right), 5 (wrong), 0 (at PAD, ignored)
    let logits = Tensor::zeros([1, 3, 13], (Kind::Float, Device::Cpu));
    let _ = logits.get(0).get(0).get(3).fill_(1.0);
    let _ = logits.get(0).get(1).get(5).fill_(1.0);
    assert_eq!(token_accuracy(&logits, &labels), 0.5);
}

/// A model that says EOS at every step: with the output bias at +100 for EOS, greedy
/// decoding must stop after one step for the whole batch.
#[test]
fn greedy_decode_stops_when_every_row_emitted_eos() {
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let m = Transformer::new(vs.root(), TransformerConfig { dropout: 0.0, ..tiny() }).unwrap();
    tch::no_grad(|| {
        let _ = m.out_proj.bs.as_ref().unwrap().get(EOS_ID).fill_(100.0);
    });
    let src = make_dataset(4, 0).src;
    let out = greedy_decode(&m, &src, SEQ_LEN);
    assert_eq!(out.size(), [4, 2], "BOS + EOS and nothing more");
    assert!(out.select(1, 1).eq(EOS_ID).all().int64_value(&[]) == 1);
}

#[test]
fn greedy_decode_pads_finished_rows_and_respects_max_len() {
    tch::manual_seed(3);
    let vs = nn::VarStore::new(Device::Cpu);
    let m = Transformer::new(vs.root(), TransformerConfig { dropout: 0.0, ..tiny() }).unwrap();
    let out = greedy_decode(&m, &make_dataset(16, 2).src, SEQ_LEN);
    assert!(out.size()[1] <= SEQ_LEN as i64);
    for i in 0..16 {
        let r = Vec::<i64>::try_from(&out.get(i)).unwrap();
        if let Some(e) = r.iter().position(|&t| t == EOS_ID) {
            assert!(r[e + 1..].iter().all(|&t| t == PAD_ID), "row {i}: {r:?}");
        }
    }
}

#[test]
fn a_few_hundred_steps_start_learning_the_reversal() {
    let (train, _) = (make_dataset(2048, 0), ());
    let mut t = Trainer::new(TransformerConfig { dropout: 0.0, ..tiny() }, Device::Cpu, 0, 100, 0.0).unwrap();
    let mut losses = vec![];
    for step in 0..150 {
        let idx = Tensor::arange_start((step % 32) * 64, (step % 32 + 1) * 64, (Kind::Int64, Device::Cpu));
        losses.push(t.train_step(&train.src.index_select(0, &idx), &train.tgt.index_select(0, &idx)).0);
    }
    let first: f64 = losses[..10].iter().sum::<f64>() / 10.0;
    let last: f64 = losses[140..].iter().sum::<f64>() / 10.0;
    assert!(first > 2.0, "an untrained model should be near ln(13) ≈ 2.56, got {first}");
    assert!(last < 0.75 * first, "loss did not fall: {first} -> {last}");
}

#[test]
fn same_seed_same_losses() {
    let train = make_dataset(256, 0);
    let run = || {
        let mut t = Trainer::new(tiny(), Device::Cpu, 5, 100, 0.0).unwrap();
        (0..4).map(|s| {
            let idx = Tensor::arange_start(s * 64, (s + 1) * 64, (Kind::Int64, Device::Cpu));
            t.train_step(&train.src.index_select(0, &idx), &train.tgt.index_select(0, &idx)).0
        }).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn checkpoint_round_trip_is_exact_and_atomic() {
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let cfg = TransformerConfig { dropout: 0.0, ..tiny() };
    let m = Transformer::new(vs.root(), cfg).unwrap();
    let path = temp_path("roundtrip");
    // Two writers racing on one path (two test cases, two terminals) must each land a whole
    // file and leave no temporary behind.
    std::thread::scope(|s| {
        s.spawn(|| save_checkpoint(&vs, &cfg, &path).unwrap());
        s.spawn(|| save_checkpoint(&vs, &cfg, &path).unwrap());
    });
    let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("model.safetensors")], "the temporary files must be renamed away");
    let (_vs2, m2) = load_checkpoint(&path, &cfg, Device::Cpu).unwrap();
    let data = make_dataset(8, 1);
    let (src, tgt_in) = (data.src, teacher_forcing(&data.tgt).0);
    let (a, b) = tch::no_grad(|| (m.forward(&src, &tgt_in, false), m2.forward(&src, &tgt_in, false)));
    assert!(a.equal(&b));
    assert_eq!(exact_match(&m, &src, &data.tgt, 4), exact_match(&m2, &src, &data.tgt, 8));
}

#[test]
fn missing_checkpoint_says_how_to_make_one() {
    let err = load_checkpoint(std::path::Path::new("/nonexistent/x.safetensors"), &tiny(), Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("no checkpoint") && err.contains("09_train_reverse"), "{err}");
}

#[rstest]
#[case::other_width(TransformerConfig { d_model: 64, dff: 128, ..tiny() }, "d_model 64")]
#[case::other_heads(TransformerConfig { num_heads: 2, ..tiny() }, "heads 2")]
fn checkpoint_of_another_config_is_refused(#[case] stored: TransformerConfig, #[case] mentions: &str) {
    let vs = nn::VarStore::new(Device::Cpu);
    Transformer::new(vs.root(), stored).unwrap();
    let path = temp_path(&format!("mismatch-{}", stored.d_model * 10 + stored.num_heads));
    save_checkpoint(&vs, &stored, &path).unwrap();
    let err = load_checkpoint(&path, &tiny(), Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("different configuration") && err.contains(mentions), "{err}");
}

#[test]
fn foreign_safetensors_file_is_refused() {
    let path = temp_path("foreign");
    Tensor::write_safetensors(&[("w", Tensor::zeros([2], (Kind::Float, Device::Cpu)))], &path).unwrap();
    let err = load_checkpoint(&path, &tiny(), Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("not a checkpoint of this course"), "{err}");
}

#[test]
fn init_is_recorded_but_does_not_block_loading() {
    let vs = nn::VarStore::new(Device::Cpu);
    let stored = TransformerConfig { init: Init::FrameworkDefault, ..tiny() };
    Transformer::new(vs.root(), stored).unwrap();
    let path = temp_path("init");
    save_checkpoint(&vs, &stored, &path).unwrap();
    assert!(load_checkpoint(&path, &tiny(), Device::Cpu).is_ok());
}
