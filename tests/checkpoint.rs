//! Checkpoints: exact round trips, deterministic bytes, atomic saves, and every kind
//! of file that is not a good checkpoint refused with one sentence.
use std::path::{Path, PathBuf};

use rstest::rstest;
use tch::{Device, Kind, Tensor};
use transformer_course::checkpoint::{
    checkpoint_bytes, ensure_reverse_task, load_checkpoint, save_checkpoint,
};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::data::make_dataset;
use transformer_course::train::teacher_forcing;

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
    std::thread::scope(|s| {
        s.spawn(|| save_checkpoint(&vs, &m.config, &path).unwrap());
        s.spawn(|| save_checkpoint(&vs, &m.config, &path).unwrap());
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

#[test]
fn missing_checkpoint_says_how_to_make_one() {
    let err = load_err(Path::new("/nonexistent/x.safetensors"));
    assert!(
        err.contains("no checkpoint") && err.contains("09_train_reverse"),
        "{err}"
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
