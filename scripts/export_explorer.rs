//! Exports a trained checkpoint for the book's attention explorer
//! (book/src/explorer.md). Not a chapter: scripts/regen-outputs.sh runs it right
//! after 09_train_reverse, so the page shows the model that run trained.
//!
//! The page cannot fetch() a file when the book is opened from disk (file://), so
//! the weights travel as a script: a safetensors file like the checkpoint (same
//! names, same metadata) with every tensor in fp16, base64-encoded into
//! book/src/explorer/weights.js, under a provenance header. fp16 halves the size
//! (about 2.5 MB as base64); the program measures what the rounding costs on the
//! validation set, so the page's model is known to decode like the checkpoint.
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};
use clap::Parser;
use serde_json::{json, Value};
use tch::{nn, Device, Kind, Tensor};
use transformer_course::data::make_dataset;
use transformer_course::generate::{correct_rows, greedy_decode};
use transformer_course::layers::parameter_count;
use transformer_course::transformer::Transformer;
use transformer_course::vocab::SEQ_LEN;
use workbench::checkpoint::{
    ensure_reverse_task, load_checkpoint, DEFAULT_CHECKPOINT, MAX_HEADER,
};
use workbench::cli::{in_range, run_main, thousands};
use workbench::output::{
    check_outputs_and_inputs, open_input, write_bytes_atomic,
};
use workbench::sys::LIBTORCH_VERSION;

/// Export a checkpoint to fp16 for the book's attention explorer.
#[derive(Parser)]
struct Args {
    #[arg(long, default_value = DEFAULT_CHECKPOINT)]
    checkpoint: PathBuf,
    #[arg(long, default_value = "book/src/explorer/weights.js")]
    out: PathBuf,
    /// Validation samples (seed 1, as 09_train_reverse) on which the fp16 model
    /// is compared with the checkpoint.
    #[arg(long, default_value_t = 1000, value_parser = in_range(1, 100_000))]
    n_val: u64,
}

fn main() {
    let args = Args::parse();
    run_main(|| run(args))
}

fn run(args: Args) -> Result<()> {
    check_outputs_and_inputs(
        &[("--out", &args.out)],
        &[("--checkpoint", &args.checkpoint)],
    )?;
    let (vs, model) = load_checkpoint(&args.checkpoint, Device::Cpu)?;
    ensure_reverse_task(&model, &args.checkpoint)?;
    let n_params = parameter_count(&vs);
    let file_len = std::fs::metadata(&args.checkpoint)?.len();
    println!(
        "checkpoint {} ({} bytes)",
        args.checkpoint.display(),
        thousands(file_len as i64)
    );
    println!(
        "  {}\n  {} parameters",
        model.config.shape_summary(),
        thousands(n_params)
    );

    // The same model with every weight rounded to fp16 and back: what the page runs.
    let mut vs16 = nn::VarStore::new(Device::Cpu);
    let model16 = Transformer::new(vs16.root(), model.config)?;
    let mut tensors = BTreeMap::new();
    let (mut worst, mut worst_rel) = (0f64, 0f64);
    let mut theirs = vs16.variables();
    tch::no_grad(|| -> Result<()> {
        for (name, var) in vs.variables() {
            let half = var.to_kind(Kind::Half);
            let back = half.to_kind(Kind::Float);
            ensure!(
                bool::try_from(back.isfinite().all())?,
                "'{name}' has values beyond fp16's range (±65504)"
            );
            let err = (&back - &var).abs();
            worst = worst.max(err.max().double_value(&[]));
            let rel = &err / var.abs().clamp_min(1e-3);
            worst_rel = worst_rel.max(rel.max().double_value(&[]));
            let mut mine = theirs.remove(&name).context("same variables")?;
            mine.copy_(&back);
            tensors.insert(name, half);
        }
        Ok(())
    })?;
    vs16.freeze();
    println!(
        "as fp16: the largest change of a weight is {worst:.1e}\n  \
         ({:.2}% of its size, weights under 1e-3 counted as 1e-3)",
        100.0 * worst_rel
    );

    // The data of 09_train_reverse --data-seed 0: validation seed 1.
    let val = make_dataset(args.n_val as usize, 1);
    let right32 = correct_rows(&model, &val.src, &val.tgt, 500);
    let right16 = correct_rows(&model16, &val.src, &val.tgt, 500);
    let out32 = greedy_decode(&model, &val.src, SEQ_LEN);
    let out16 = greedy_decode(&model16, &val.src, SEQ_LEN);
    let differ = if out32.size() == out16.size() {
        let rows_equal = out32.eq_tensor(&out16).all_dim(1, false);
        i64::try_from(rows_equal.logical_not().sum(Kind::Int64))?
    } else {
        args.n_val as i64 // some row ran longer in one of them
    };
    let rate =
        |r: &[bool]| r.iter().filter(|&&x| x).count() as f64 / r.len() as f64;
    println!(
        "validation set ({} samples, seed 1), greedy decoding:",
        args.n_val
    );
    println!(
        "  exact match fp32 {:.3}, fp16 {:.3}; outputs that differ: {differ}",
        rate(&right32),
        rate(&right16)
    );

    let metadata = checkpoint_metadata(&args.checkpoint)?;
    let bytes = safetensors_fp16(&tensors, metadata)?;
    let provenance = provenance(&args.checkpoint);
    let shipped = json!({
        "provenance": provenance,
        "parameters": n_params,
        "safetensors_base64": base64(&bytes),
    });
    let mut js = String::new();
    for line in &provenance {
        js += &format!("// {line}\n");
    }
    js += "//\n// The course's trained weights for the attention explorer \
           (explorer.md): a\n// safetensors file, every tensor fp16, as base64. \
           Made by scripts/export_explorer.rs;\n// regenerate it with \
           `scripts/regen-outputs.sh --only export_explorer`.\n";
    js += "globalThis.EXPLORER_WEIGHTS = ";
    js += &serde_json::to_string_pretty(&shipped)?;
    js += ";\n";
    write_bytes_atomic(&args.out, js.as_bytes())?;
    println!(
        "wrote {} ({} bytes)",
        args.out.display(),
        thousands(js.len() as i64)
    );
    Ok(())
}

/// The checkpoint's own metadata (format and config), read from its header,
/// without the whole-file checksum: that one describes the fp32 file, and the
/// fp16 file is another. (The weights' checksum stays, as in the shipped
/// file: the page checks it only on fp32 files.)
fn checkpoint_metadata(path: &Path) -> Result<Value> {
    let (mut file, _) = open_input(path, u64::MAX, "a checkpoint")?;
    let mut len = [0u8; 8];
    file.read_exact(&mut len)?;
    let n = u64::from_le_bytes(len);
    ensure!(n <= MAX_HEADER, "its header claims {n} bytes");
    let mut header = vec![0u8; n as usize];
    file.read_exact(&mut header)?;
    let header: Value = serde_json::from_slice(&header)?;
    let mut metadata = header
        .get("__metadata__")
        .cloned()
        .context("the checkpoint has no metadata")?;
    if let Some(m) = metadata.as_object_mut() {
        m.remove("file_checksum");
    }
    Ok(metadata)
}

/// A safetensors file laid out as workbench/src/checkpoint.rs lays out a
/// checkpoint, with F16 data: names sorted, the header padded to a multiple of 8 bytes.
fn safetensors_fp16(
    tensors: &BTreeMap<String, Tensor>,
    metadata: Value,
) -> Result<Vec<u8>> {
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), metadata);
    let mut data: Vec<u8> = Vec::new();
    for (name, t) in tensors {
        let bits = t.contiguous().view_dtype(Kind::Int16).flatten(0, -1);
        let start = data.len();
        for v in Vec::<i16>::try_from(&bits)? {
            data.extend(v.to_le_bytes());
        }
        header.insert(
            name.clone(),
            json!({
                "dtype": "F16",
                "shape": t.size(),
                "data_offsets": [start, data.len()],
            }),
        );
    }
    let mut header = serde_json::to_vec(&Value::Object(header))?;
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header);
    bytes.extend(data);
    Ok(bytes)
}

/// The two header lines of every output of the course: the command, then the
/// device, libtorch and date.
fn provenance(checkpoint: &Path) -> Vec<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut command = "$ cargo run --release --bin export_explorer".to_string();
    if !args.is_empty() {
        command += &format!(" -- {}", args.join(" "));
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let version = LIBTORCH_VERSION.split('+').next().unwrap_or("");
    vec![
        command,
        format!(
            "# device: cpu ({cpu}, {threads} threads) · libtorch {version} · \
             {} UTC · from {}",
            today(),
            checkpoint.display()
        ),
    ]
}

/// Today's date (UTC) as YYYY-MM-DD, from the days since 1970 (Howard Hinnant's
/// civil_from_days).
fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Standard base64 with padding (RFC 4648), which the page's atob() reads.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] =
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
