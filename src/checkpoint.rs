//! Checkpoints: every weight as fp32 in a safetensors file, with the model's config
//! in the file's metadata so that a loader can refuse a checkpoint of another shape
//! with a clear message.
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use tch::{nn, Device, Kind, Tensor};

use crate::config::{Init, TransformerConfig};
use crate::layers::parameter_count;
use crate::transformer::Transformer;

/// Where `09_train_reverse` writes and chapters 10–11 read by default.
pub const DEFAULT_CHECKPOINT: &str =
    "checkpoints/reverse_transformer.safetensors";

/// What the metadata's "format" field says.
const FORMAT: &str = "transformer-course/1";

/// A header longer than this is not one of ours (ours is about 6 KiB).
const MAX_HEADER: u64 = 1 << 20;

// ANCHOR: save
/// Saves every variable of `vs` as fp32 with `config` in the metadata, written
/// atomically: an interrupted save never leaves a torn file.
pub fn save_checkpoint(
    vs: &nn::VarStore,
    config: &TransformerConfig,
    path: &Path,
) -> Result<()> {
    crate::output::write_bytes_atomic(path, &checkpoint_bytes(vs, config)?)
}

/// The bytes of a safetensors file: an 8-byte header length, a JSON header
/// (tensor names, shapes, offsets, and our metadata), then the raw data. The same
/// weights and config always give the same bytes (names and keys are sorted).
pub fn checkpoint_bytes(
    vs: &nn::VarStore,
    config: &TransformerConfig,
) -> Result<Vec<u8>> {
    let named: BTreeMap<String, Tensor> = vs.variables().into_iter().collect();
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), metadata(config));
    let mut data: Vec<u8> = Vec::new();
    for (name, t) in &named {
        let t = t.to_device(Device::Cpu).to_kind(Kind::Float).contiguous();
        let values = Vec::<f32>::try_from(&t.flatten(0, -1))?;
        let start = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        let info = json!({
            "dtype": "F32",
            "shape": t.size(),
            "data_offsets": [start, data.len()],
        });
        header.insert(name.clone(), info);
    }
    let mut header =
        serde_json::to_string(&Value::Object(header))?.into_bytes();
    // The format wants the data to start at a multiple of 8 bytes.
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header);
    bytes.extend(data);
    Ok(bytes)
}
// ANCHOR_END: save

fn metadata(c: &TransformerConfig) -> Value {
    let fields = [
        ("format", FORMAT.to_string()),
        ("src_vocab", c.src_vocab.to_string()),
        ("tgt_vocab", c.tgt_vocab.to_string()),
        ("d_model", c.d_model.to_string()),
        ("num_heads", c.num_heads.to_string()),
        ("d_ff", c.d_ff.to_string()),
        ("num_layers", c.num_layers.to_string()),
        ("max_len", c.max_len.to_string()),
        ("init", c.init.name().to_string()),
    ];
    let map: BTreeMap<&str, String> = fields.into_iter().collect();
    json!(map)
}

// ANCHOR: load
/// Loads a checkpoint written by `save_checkpoint` onto `device` for inference
/// (dropout 0). Returns the model built from the config stored in the file; the
/// caller checks that it suits its task.
pub fn load_checkpoint(
    path: &Path,
    device: Device,
) -> Result<(nn::VarStore, Transformer)> {
    let shown = path.display();
    let mut file = open_regular_file(path)?;
    let (header_len, header) = read_header(&mut file, path)?;
    let config = config_from_header(&header, path)?;
    let mut vs = nn::VarStore::new(device);
    let model = Transformer::new(vs.root(), config).with_context(|| {
        format!("{shown}: its configuration is not a valid model")
    })?;
    // Refuse a file of the wrong size before reading it all.
    let expected = 8 + header_len + 4 * parameter_count(&vs) as u64;
    let actual = file.metadata()?.len();
    ensure!(
        actual == expected,
        "{shown} is {actual} bytes, but a checkpoint of its configuration \
         ({}) is {expected} bytes: the file is damaged or not one of ours",
        config.shape_summary()
    );
    let mut buf = Vec::with_capacity(actual as usize);
    std::fs::File::open(path)?
        .read_to_end(&mut buf)
        .with_context(|| format!("cannot read {shown}"))?;
    let tensors = safetensors::SafeTensors::deserialize(&buf).map_err(|e| {
        anyhow::anyhow!("{shown} is not a valid safetensors file ({e:?})")
    })?;
    tch::no_grad(|| -> Result<()> {
        for (name, mut var) in vs.variables() {
            let view = tensors.tensor(&name).map_err(|_| {
                anyhow::anyhow!("{shown} has no tensor '{name}'")
            })?;
            let shape: Vec<i64> =
                view.shape().iter().map(|&d| d as i64).collect();
            let want = var.size();
            ensure!(
                shape == want,
                "{shown}: '{name}' has shape {shape:?}, the model needs {want:?}"
            );
            ensure!(
                view.dtype() == safetensors::Dtype::F32,
                "{shown}: '{name}' is not fp32"
            );
            let values: Vec<f32> = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            ensure!(
                values.iter().all(|v| v.is_finite()),
                "{shown}: '{name}' holds NaN or infinite values; \
                 the run that wrote it diverged, so train again"
            );
            let t = Tensor::from_slice(&values).view(shape.as_slice());
            var.copy_(&t.to_device(device));
        }
        Ok(())
    })?;
    vs.freeze();
    Ok((vs, model))
}
// ANCHOR_END: load

fn open_regular_file(path: &Path) -> Result<std::fs::File> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "no checkpoint at {shown}: train first with \
             `cargo run --release --bin 09_train_reverse`"
        ),
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {shown}"))
        }
    };
    ensure!(
        meta.is_file(),
        "{shown} is not a regular file, so not a checkpoint"
    );
    std::fs::File::open(path).with_context(|| format!("cannot open {shown}"))
}

/// Reads the 8-byte length and the JSON header that follows it.
fn read_header(file: &mut std::fs::File, path: &Path) -> Result<(u64, Value)> {
    let shown = path.display();
    let not_ours = || format!("{shown} is not a safetensors checkpoint");
    let mut len = [0u8; 8];
    file.read_exact(&mut len).with_context(not_ours)?;
    let n = u64::from_le_bytes(len);
    ensure!(
        n > 1 && n <= MAX_HEADER,
        "{} (its header length is {n})",
        not_ours()
    );
    let mut header = vec![0u8; n as usize];
    file.read_exact(&mut header).with_context(not_ours)?;
    let value: Value =
        serde_json::from_slice(&header).with_context(not_ours)?;
    Ok((n, value))
}

fn config_from_header(
    header: &Value,
    path: &Path,
) -> Result<TransformerConfig> {
    let shown = path.display();
    let m = header.get("__metadata__").and_then(Value::as_object);
    let field = |k: &str| m.and_then(|m| m.get(k)).and_then(Value::as_str);
    ensure!(
        field("format") == Some(FORMAT),
        "{shown} is not a checkpoint of this course \
         (its metadata has no transformer-course config)"
    );
    let number = |k: &str| -> Result<i64> {
        field(k).and_then(|v| v.parse().ok()).with_context(|| {
            format!("{shown}: metadata field '{k}' is missing or not a number")
        })
    };
    // Checkpoints from before the rename call d_ff "dff".
    let d_ff = number("d_ff").or_else(|_| number("dff"))?;
    let init = match field("init") {
        Some(name) => Init::from_name(name)
            .with_context(|| format!("{shown}: unknown init '{name}'"))?,
        None => Init::Paper,
    };
    Ok(TransformerConfig {
        src_vocab: number("src_vocab")?,
        tgt_vocab: number("tgt_vocab")?,
        d_model: number("d_model")?,
        num_heads: number("num_heads")?,
        d_ff,
        num_layers: number("num_layers")?,
        max_len: number("max_len")?,
        dropout: 0.0,
        init,
    })
}

/// Checks that a loaded model speaks the reversal task's vocabulary and covers its
/// sequence length, which the chapters' programs assume.
pub fn ensure_reverse_task(model: &Transformer, path: &Path) -> Result<()> {
    let (c, task) = (model.config, TransformerConfig::reverse_task());
    ensure!(
        c.src_vocab == task.src_vocab
            && c.tgt_vocab == task.tgt_vocab
            && c.max_len >= task.max_len,
        "{} was trained for another task: {} (this program needs vocab {}/{} \
         and max_len at least {})",
        path.display(),
        c.shape_summary(),
        task.src_vocab,
        task.tgt_vocab,
        task.max_len
    );
    Ok(())
}
