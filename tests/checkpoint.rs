//! Checkpoints: exact round trips, deterministic bytes, atomic saves, and every kind
//! of file that is not a good checkpoint refused with one sentence.
use std::path::{Path, PathBuf};

use rstest::rstest;
use tch::{Device, Kind, Tensor};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::data::make_dataset;
use transformer_course::train::teacher_forcing;
use workbench::checkpoint::{
    checkpoint_bytes, checkpoint_size, ensure_reverse_task, expected_tensors,
    load_checkpoint, save_checkpoint, MissingCheckpoint,
};

mod common;
use common::{model_with, tiny_config};

/// An empty folder of this test's own, with a file name in it.
fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("course-checkpoint-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("model.safetensors")
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn load_err(path: &Path) -> String {
    match load_checkpoint(path, Device::Cpu) {
        Ok(_) => {
            panic!("{} loaded, but should have been refused", path.display())
        }
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn round_trip_is_exact_and_keeps_the_config() {
    let cfg = TransformerConfig {
        init: Init::FrameworkDefault,
        ..tiny_config()
    };
    let (vs, m) = model_with(cfg, 0);
    let path = temp_path("roundtrip");
    save_checkpoint(&vs, &cfg, &path).unwrap();
    let (_vs2, m2) = load_checkpoint(&path, Device::Cpu).unwrap();
    // The stored config comes back, init included; dropout is 0 for inference.
    assert_eq!(
        m2.config,
        TransformerConfig {
            dropout: 0.0,
            ..cfg
        }
    );
    let data = make_dataset(8, 1);
    let (src, tgt_in) = (data.src, teacher_forcing(&data.tgt).0);
    let (a, b) = tch::no_grad(|| {
        (
            m.forward(&src, &tgt_in, false),
            m2.forward(&src, &tgt_in, false),
        )
    });
    assert!(a.equal(&b), "the loaded model computes something else");
}

#[test]
fn the_same_weights_give_the_same_bytes() {
    let (vs, m) = model_with(tiny_config(), 4);
    let first = checkpoint_bytes(&vs, &m.config).unwrap();
    for _ in 0..3 {
        assert!(
            checkpoint_bytes(&vs, &m.config).unwrap() == first,
            "checkpoint bytes differ between saves"
        );
    }
    let (vs2, m2) = model_with(tiny_config(), 5);
    assert!(
        checkpoint_bytes(&vs2, &m2.config).unwrap() != first,
        "other weights, same bytes?"
    );
}

#[test]
fn racing_saves_each_land_a_whole_file_and_leave_no_temporary() {
    let (vs, m) = model_with(tiny_config(), 0);
    let path = temp_path("race");
    // Eight at once: each one's clean-up of dead writers' temporaries runs
    // while the others create theirs, and must never take a live one.
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| save_checkpoint(&vs, &m.config, &path).unwrap());
        }
    });
    assert_eq!(files_in(path.parent().unwrap()), ["model.safetensors"]);
    assert!(load_checkpoint(&path, Device::Cpu).is_ok());
}

#[test]
fn a_killed_saves_temporary_is_cleaned_up_by_the_next_save() {
    let (vs, m) = model_with(tiny_config(), 0);
    let path = temp_path("killed");
    save_checkpoint(&vs, &m.config, &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    // What a save killed half-way leaves: a temporary of a process that is gone
    // (pid 2^22 + 1 is above Linux's default pid_max), and the old file intact.
    let dir = path.parent().unwrap();
    let stale = dir.join(".model.safetensors.tmp-4194305-0.safetensors");
    std::fs::write(&stale, &before[..100]).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
    save_checkpoint(&vs, &m.config, &path).unwrap();
    assert_eq!(
        files_in(dir),
        ["model.safetensors"],
        "the stale temporary must be removed"
    );
}

/// The library says what is missing, in its own terms; the programs add how to
/// make one (tests/cli_errors.rs checks their advice).
#[test]
fn a_missing_checkpoint_is_an_error_the_programs_can_recognise() {
    let path = Path::new("/nonexistent/x.safetensors");
    let Err(err) = load_checkpoint(path, Device::Cpu) else {
        panic!("a missing file loaded");
    };
    let missing = err.downcast_ref::<MissingCheckpoint>().expect("typed");
    assert_eq!(missing.0, path);
    assert_eq!(
        err.to_string(),
        "no checkpoint at /nonexistent/x.safetensors"
    );
}

#[rstest]
#[case::a_directory("/tmp")]
#[case::a_device("/dev/zero")]
fn what_is_not_a_regular_file_is_refused_before_reading(#[case] path: &str) {
    let err = load_err(Path::new(path));
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn foreign_safetensors_file_is_refused() {
    let path = temp_path("foreign");
    Tensor::write_safetensors(
        &[("w", Tensor::zeros([2], (Kind::Float, Device::Cpu)))],
        &path,
    )
    .unwrap();
    let err = load_err(&path);
    assert!(err.contains("not a checkpoint of this course"), "{err}");
}

#[rstest]
#[case::empty(0)]
#[case::header_cut(20)]
#[case::data_cut(-1)]
#[case::data_appended(1)]
fn damaged_files_are_refused(#[case] how: i64) {
    let (vs, m) = model_with(tiny_config(), 0);
    let mut bytes = checkpoint_bytes(&vs, &m.config).unwrap();
    match how {
        0 => bytes.clear(),
        -1 => bytes.truncate(bytes.len() - 4),
        1 => bytes.extend([0u8; 4]),
        n => bytes.truncate(n as usize),
    }
    let path = temp_path(&format!("damaged{how}"));
    std::fs::write(&path, &bytes).unwrap();
    let err = load_err(&path);
    assert!(
        err.contains("not a safetensors checkpoint")
            || err.contains("bytes, but a checkpoint"),
        "{err}"
    );
}

#[rstest]
#[case::nan(f64::NAN)]
#[case::inf(f64::INFINITY)]
fn non_finite_weights_are_refused(#[case] value: f64) {
    let (vs, m) = model_with(tiny_config(), 0);
    tch::no_grad(|| {
        let _ = m.out_proj.ws.get(0).get(0).fill_(value);
    });
    let path = temp_path(&format!("nonfinite{}", value.is_nan()));
    save_checkpoint(&vs, &m.config, &path).unwrap();
    let err = load_err(&path);
    assert!(
        err.contains("NaN or infinite") && err.contains("out_proj.weight"),
        "{err}"
    );
}

#[test]
fn a_model_of_another_task_is_refused_by_the_programs() {
    let other = TransformerConfig {
        src_vocab: 17,
        ..tiny_config()
    };
    let (vs, _) = model_with(other, 0);
    let path = temp_path("othertask");
    save_checkpoint(&vs, &other, &path).unwrap();
    let (_vs, model) = load_checkpoint(&path, Device::Cpu).unwrap();
    let err = ensure_reverse_task(&model, &path).unwrap_err().to_string();
    assert!(
        err.contains("another task") && err.contains("vocab 17/13"),
        "{err}"
    );
    // Another width on the same task is fine: the model is built from the file.
    let (vs, _) = model_with(
        TransformerConfig {
            d_model: 64,
            d_ff: 128,
            ..tiny_config()
        },
        0,
    );
    let path = temp_path("otherwidth");
    save_checkpoint(
        &vs,
        &TransformerConfig {
            d_model: 64,
            d_ff: 128,
            ..tiny_config()
        },
        &path,
    )
    .unwrap();
    let (_vs, model) = load_checkpoint(&path, Device::Cpu).unwrap();
    assert_eq!(model.config.d_model, 64);
    ensure_reverse_task(&model, &path).unwrap();
}

// ---- loading is bounded by the file ------------------------------------------------------

/// The parts of a checkpoint file: its JSON header and its tensor bytes.
fn split(bytes: &[u8]) -> (serde_json::Value, Vec<u8>) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    (header, bytes[8 + n..].to_vec())
}

/// A file from a header and tensor bytes, padded as safetensors wants.
fn join(header: &serde_json::Value, data: &[u8]) -> Vec<u8> {
    let mut h = serde_json::to_string(header).unwrap().into_bytes();
    h.resize(h.len().next_multiple_of(8), b' ');
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    out
}

/// A tiny checkpoint's bytes changed by `edit`, written to a file of its own.
fn crafted(
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value, &mut Vec<u8>),
) -> PathBuf {
    let (vs, m) = model_with(tiny_config(), 0);
    let (mut header, mut data) =
        split(&checkpoint_bytes(&vs, &m.config).unwrap());
    edit(&mut header, &mut data);
    let path = temp_path(name);
    std::fs::write(&path, join(&header, &data)).unwrap();
    path
}

fn set_meta(header: &mut serde_json::Value, key: &str, value: &str) {
    header["__metadata__"][key] = serde_json::Value::String(value.into());
}

/// Metadata claiming a model far bigger than the file is refused from the
/// header alone: in well under a second, before any allocation.
#[rstest]
#[case::a_million_layers("num_layers", "1000000", "num_layers is 1000000")]
#[case::huge_width("d_model", "1048576", "d_model is 1048576")]
#[case::huge_vocab("src_vocab", "4000000000", "vocab is 4000000000")]
#[case::huge_max_len("max_len", "1000000000", "max_len is 1000000000")]
#[case::huge_ffn("d_ff", "100000000", "d_ff is 100000000")]
fn a_config_beyond_sane_bounds_is_refused_at_once(
    #[case] key: &str,
    #[case] value: &str,
    #[case] mentions: &str,
) {
    let path =
        crafted(&format!("bounds-{key}"), |h, _| set_meta(h, key, value));
    let t = std::time::Instant::now();
    let err = load_err(&path);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    assert!(
        err.contains(mentions) && err.contains("cannot be a checkpoint"),
        "{err}"
    );
}

/// A config within bounds but unlike the tensors in the file (a larger model
/// claimed, or a tensor of another shape) is refused before the model is built.
#[test]
fn tensors_unlike_the_declared_config_are_refused() {
    let path = crafted("more-layers", |h, _| set_meta(h, "num_layers", "200"));
    let err = load_err(&path);
    assert!(err.contains("has no tensor 'decoder.layers."), "{err}");
    let path = crafted("shape", |h, _| {
        h["out_proj.bias"]["shape"] = serde_json::json!([26]);
    });
    let err = load_err(&path);
    assert!(err.contains("'out_proj.bias' has shape [26]"), "{err}");
    let path = crafted("offsets", |h, _| {
        h["out_proj.bias"]["data_offsets"] = serde_json::json!([0, 52]);
    });
    let err = load_err(&path);
    assert!(err.contains("overlap"), "{err}");
    let path = crafted("extra", |h, _| {
        h["spare.weight"] = h["out_proj.bias"].clone();
    });
    assert!(load_err(&path).contains("'spare.weight'"));
}

#[test]
fn a_header_longer_than_the_file_is_refused() {
    let path = temp_path("header-past-end");
    let mut bytes = 4096u64.to_le_bytes().to_vec();
    bytes.extend(b"{}      ");
    std::fs::write(&path, bytes).unwrap();
    let err = load_err(&path);
    assert!(
        err.contains("header claims 4096 bytes, the file has 16"),
        "{err}"
    );
}

/// Well-formed files with wrong weights: one flipped byte, all zeros.
#[rstest]
#[case::one_flipped_byte(1)]
#[case::all_zeros(0)]
fn damaged_weights_are_found_by_the_checksum(#[case] how: u8) {
    let path = crafted(&format!("damaged-weights-{how}"), |_, data| {
        if how == 1 {
            let i = data.len() / 3;
            data[i] ^= 0x10;
        } else {
            data.iter_mut().for_each(|b| *b = 0);
        }
    });
    let err = load_err(&path);
    assert!(
        err.contains("is damaged") && err.contains("checksum"),
        "{err}"
    );
}

/// A file without its whole-file checksum is refused, whether the checksums
/// were stripped from a current file or it comes from before they were
/// written: read as "an older version", it would load with its config and
/// weights unchecked, which is exactly what damage (or an edit) would want.
#[rstest]
#[case::no_checksum(&["checksum", "file_checksum"])]
#[case::weights_only(&["file_checksum"])]
fn a_checkpoint_without_its_checksums_is_refused(#[case] removed: &[&str]) {
    let path = crafted(&format!("old-{}", removed.len()), |h, _| {
        let meta = h["__metadata__"].as_object_mut().unwrap();
        for key in removed {
            meta.remove(*key);
        }
    });
    let err = load_err(&path);
    assert!(
        err.contains("is damaged, or older")
            && err.contains("no file_checksum"),
        "{err}"
    );
}

/// A key written twice (a second "num_heads" that a reader keeping the last
/// one would believe) is refused, at either level of the header.
#[rstest]
#[case::metadata("\"num_heads\":", "\"num_heads\":\"8\",\"num_heads\":")]
#[case::tensor("\"dtype\":", "\"dtype\":\"F16\",\"dtype\":")]
fn a_key_written_twice_is_refused(#[case] from: &str, #[case] to: &str) {
    let (vs, m) = model_with(tiny_config(), 0);
    let bytes = checkpoint_bytes(&vs, &m.config).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    let mut edited = header.replacen(from, to, 1).trim_end().to_string();
    while !edited.len().is_multiple_of(8) {
        edited.push(' ');
    }
    let mut out = (edited.len() as u64).to_le_bytes().to_vec();
    out.extend(edited.as_bytes());
    out.extend(&bytes[8 + n..]);
    let path = temp_path(&format!("twice-{}", from.len()));
    std::fs::write(&path, out).unwrap();
    let err = load_err(&path);
    assert!(err.contains("appears twice"), "{err}");
}

// ---- the checksum covers what decides the answer ---------------------------------------

/// A small model's checkpoint: a few kilobytes of weights under a header of
/// about three, so that every byte of the header can be tried.
fn small_checkpoint() -> Vec<u8> {
    let cfg = TransformerConfig {
        d_model: 8,
        num_heads: 2,
        d_ff: 16,
        num_layers: 1,
        ..tiny_config()
    };
    let (vs, _) = model_with(cfg, 0);
    checkpoint_bytes(&vs, &cfg).unwrap()
}

/// `bytes` with the first `from` after `after` replaced by `to`, same length.
fn replaced(bytes: &[u8], after: &str, from: &str, to: &str) -> Vec<u8> {
    let find = |hay: &[u8], needle: &[u8]| {
        hay.windows(needle.len()).position(|w| w == needle)
    };
    let start = find(bytes, after.as_bytes()).expect(after);
    let at = start + find(&bytes[start..], from.as_bytes()).expect(from);
    let mut out = bytes.to_vec();
    out[at..at + from.len()].copy_from_slice(to.as_bytes());
    out
}

/// The cases: a config that still builds a model (num_heads 4 → 8 or
/// 1 gives a model of the same tensors, and wrong answers), and two tensors of
/// one shape whose offsets are swapped. Each keeps every size right, so only a
/// checksum over the header finds it.
#[rstest]
#[case::eight_heads("\"num_heads\"", "\"4\"", "\"8\"")]
#[case::one_head("\"num_heads\"", "\"4\"", "\"1\"")]
#[case::max_len("\"max_len\"", "\"14\"", "\"16\"")]
fn a_changed_config_is_refused(
    #[case] after: &str,
    #[case] from: &str,
    #[case] to: &str,
) {
    let (vs, m) = model_with(tiny_config(), 0);
    let good = checkpoint_bytes(&vs, &m.config).unwrap();
    let path = temp_path(&format!("config-{}", to.trim_matches('"')));
    std::fs::write(&path, replaced(&good, after, from, to)).unwrap();
    let err = load_err(&path);
    assert!(
        err.contains("is damaged") && err.contains("header"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn swapped_offsets_of_two_tensors_of_one_shape_are_refused() {
    let (vs, m) = model_with(tiny_config(), 0);
    let good = checkpoint_bytes(&vs, &m.config).unwrap();
    let (mut header, data) = split(&good);
    let offsets =
        |h: &serde_json::Value, name: &str| h[name]["data_offsets"].clone();
    let (q, k) = (
        "encoder.layers.0.mha.W_q.weight",
        "encoder.layers.0.mha.W_k.weight",
    );
    let (oq, ok) = (offsets(&header, q), offsets(&header, k));
    header[q]["data_offsets"] = ok;
    header[k]["data_offsets"] = oq;
    // join re-serialises the header as the save does: same length, same order.
    let bytes = join(&header, &data);
    assert_eq!(bytes.len(), good.len());
    let path = temp_path("swapped");
    std::fs::write(&path, bytes).unwrap();
    let err = load_err(&path);
    assert!(err.contains("header") && err.contains("checksum"), "{err}");
}

/// Every byte of the length and the header, changed in three ways (one bit; a
/// space, or a tab where the padding allows any whitespace; a letter's other
/// case, which hex digits allow): each file is refused, with one line.
#[test]
fn every_one_byte_change_to_the_header_is_refused() {
    let good = small_checkpoint();
    let header_end =
        8 + u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    let path = temp_path("every-byte");
    let mut loaded = Vec::new();
    for i in 0..header_end {
        let space = if good[i] == b' ' { b'\t' } else { b' ' };
        let case = good[i]
            ^ if good[i].is_ascii_alphabetic() {
                0x20
            } else {
                1
            };
        for b in [good[i] ^ 0x01, space, case] {
            let mut bytes = good.clone();
            bytes[i] = b;
            std::fs::write(&path, &bytes).unwrap();
            match load_checkpoint(&path, Device::Cpu) {
                Ok(_) => loaded.push((i, b as char)),
                Err(e) => {
                    let msg = format!("{e:#}");
                    assert!(!msg.contains('\n'), "byte {i}: {msg}");
                }
            }
        }
    }
    assert!(loaded.is_empty(), "loaded after a change at {loaded:?}");
    std::fs::write(&path, &good).unwrap();
    load_checkpoint(&path, Device::Cpu).expect("the unchanged file loads");
}

/// A sparse file of several gigabytes with a header that agrees with its size
/// (d_model 8192, d_ff 16384, one layer: within every bound on one number) is
/// refused from its header, in under a second, before anything of its size is
/// allocated.
#[test]
fn a_sparse_multi_gigabyte_checkpoint_is_refused_at_once() {
    let cfg = TransformerConfig {
        d_model: 8192,
        num_heads: 8,
        d_ff: 16384,
        num_layers: 1,
        ..TransformerConfig::reverse_task()
    };
    let mut header = serde_json::Map::new();
    let (vs, _) = model_with(tiny_config(), 0);
    let (small, _) = split(&checkpoint_bytes(&vs, &tiny_config()).unwrap());
    let mut meta = small["__metadata__"].clone();
    for (k, v) in [("d_model", 8192), ("num_heads", 8), ("d_ff", 16384)] {
        meta[k] = serde_json::Value::String(v.to_string());
    }
    meta["num_layers"] = serde_json::Value::String("1".into());
    header.insert("__metadata__".into(), meta);
    let mut end = 0i64;
    for (name, shape) in expected_tensors(&cfg) {
        let start = end;
        end += 4 * shape.iter().product::<i64>();
        header.insert(
            name,
            serde_json::json!({"dtype": "F32", "shape": shape,
                               "data_offsets": [start, end]}),
        );
    }
    let head = join(&serde_json::Value::Object(header), &[]);
    let path = temp_path("sparse");
    let file = std::fs::File::create(&path).unwrap();
    std::io::Write::write_all(&mut &file, &head).unwrap();
    file.set_len(head.len() as u64 + end as u64).unwrap();
    assert!(end > 4 << 30, "{end} bytes");
    let t = std::time::Instant::now();
    let err = load_err(&path);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    assert!(
        err.contains("parameter count is")
            && err.contains("cannot be a checkpoint"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

/// What `expected_tensors` predicts is what the constructors build, so the
/// checks before allocation and the reserved size are right.
#[rstest]
#[case::tiny(tiny_config())]
#[case::course(TransformerConfig::reverse_task())]
#[case::three_layers(TransformerConfig { num_layers: 3, src_vocab: 17, ..tiny_config() })]
fn the_predicted_tensors_and_size_match_the_model(
    #[case] cfg: TransformerConfig,
) {
    let (vs, _) = model_with(cfg, 0);
    let mut built: Vec<(String, Vec<i64>)> = vs
        .variables()
        .into_iter()
        .map(|(n, t)| (n, t.size()))
        .collect();
    built.sort();
    assert_eq!(expected_tensors(&cfg), built);
    let bytes = checkpoint_bytes(&vs, &cfg).unwrap();
    assert_eq!(checkpoint_size(&cfg).unwrap(), bytes.len() as u64);
}

/// An empty file, or one of a few bytes, is named too short, not "failed to
/// fill whole buffer".
#[rstest]
#[case::empty(0)]
#[case::one_byte(1)]
fn a_file_too_short_for_a_header_says_so(#[case] n: usize) {
    let path = temp_path(&format!("short-{n}"));
    std::fs::write(&path, vec![7u8; n]).unwrap();
    let err = load_err(&path);
    assert!(
        err.contains(&format!("it is {n} bytes, too short")),
        "{err}"
    );
}
