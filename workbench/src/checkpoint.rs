//! Checkpoints: every weight as fp32 in a safetensors file, with the model's config
//! and two checksums in the file's metadata: one of the weights, and one of the
//! whole file (config, tensor names, dtypes, shapes, offsets and weights), so that
//! a loader can refuse a checkpoint of another shape, or a damaged one, with a
//! clear message. Damage to the config is the worse kind: a changed `num_heads`
//! still loads, and answers wrongly.
//!
//! Loading is bounded before it starts: the header's length is checked against
//! the file's size, the config against sane bounds (the parameter count
//! included), every tensor's shape against the config, and the memory the load
//! will take against the memory this process can have, all before anything of
//! the file's size is allocated.
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use tch::{nn, Device, Kind, Tensor};

use transformer_course::config::{Init, TransformerConfig};
use transformer_course::transformer::Transformer;

/// Where `09_train_reverse` writes and chapters 10–11 read by default.
pub const DEFAULT_CHECKPOINT: &str =
    "checkpoints/reverse_transformer.safetensors";

/// What the metadata's "format" field says.
const FORMAT: &str = "transformer-course/1";

/// A header longer than this is not one of ours (ours is about 6 KiB).
pub const MAX_HEADER: u64 = 1 << 20;

/// The metadata field whose checksum covers the whole file.
const FILE_CHECKSUM: &str = "file_checksum";

/// Every metadata field a version of this course has written ("dff" is d_ff's
/// old name). Any other is damage, a changed field name, say.
const METADATA_FIELDS: [&str; 12] = [
    "format",
    "src_vocab",
    "tgt_vocab",
    "d_model",
    "num_heads",
    "d_ff",
    "dff",
    "num_layers",
    "max_len",
    "init",
    "checksum",
    FILE_CHECKSUM,
];

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
    let mut shapes = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    for (name, t) in &named {
        let t = t.to_device(Device::Cpu).to_kind(Kind::Float).contiguous();
        let values = Vec::<f32>::try_from(&t.flatten(0, -1))?;
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        shapes.push((name.clone(), t.size()));
    }
    let mut bytes = header_bytes(config, &shapes, checksum(&data))?;
    bytes.extend(data);
    seal(&mut bytes)?;
    Ok(bytes)
}

/// Writes the whole file's checksum into its place in the header: FNV-1a over
/// every byte of the file, with the 16 digits of that checksum read as zeros.
fn seal(bytes: &mut [u8]) -> Result<()> {
    let at = file_checksum_digits(bytes)
        .context("a new checkpoint's header has no file checksum")?;
    bytes[at..at + 16].fill(b'0');
    let sum = format!("{:016x}", checksum(bytes));
    bytes[at..at + 16].copy_from_slice(sum.as_bytes());
    Ok(())
}

/// Where the 16 hex digits of the file checksum start in `bytes` (a whole file,
/// or its length and header): after the one `"file_checksum":"fnv1a64:` of the
/// header. None if there is no such text, or more than one.
fn file_checksum_digits(bytes: &[u8]) -> Option<usize> {
    let key = format!("\"{FILE_CHECKSUM}\":\"{CHECKSUM}:");
    let n = bytes
        .len()
        .min(8 + u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize);
    let header = &bytes[..n];
    let mut found = header
        .windows(key.len())
        .enumerate()
        .filter(|(_, w)| *w == key.as_bytes())
        .map(|(i, _)| i + key.len());
    let at = found.next()?;
    (found.next().is_none() && at + 16 <= n).then_some(at)
}
// ANCHOR_END: save

/// The 8-byte length and the JSON header for tensors of `shapes`, stored one
/// after the other in this order, each as fp32.
fn header_bytes(
    config: &TransformerConfig,
    shapes: &[(String, Vec<i64>)],
    sum: u64,
) -> Result<Vec<u8>> {
    let mut header = serde_json::Map::new();
    // The file checksum is zeros here; `seal` writes it once the file is whole.
    header.insert("__metadata__".into(), metadata(config, sum, 0));
    let mut end = 0;
    for (name, shape) in shapes {
        let start = end;
        end += 4 * shape.iter().product::<i64>();
        let info = json!({
            "dtype": "F32",
            "shape": shape,
            "data_offsets": [start, end],
        });
        header.insert(name.clone(), info);
    }
    let mut header =
        serde_json::to_string(&Value::Object(header))?.into_bytes();
    // The format wants the data to start at a multiple of 8 bytes.
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header);
    Ok(bytes)
}

/// The size in bytes of the checkpoint of a model with `config`, known before
/// the model exists: a program can reserve the space before a long training.
pub fn checkpoint_size(config: &TransformerConfig) -> Result<u64> {
    check_bounds(config)?;
    let shapes = expected_tensors(config);
    let data: i64 = shapes.iter().map(|(_, s)| s.iter().product::<i64>()).sum();
    // Every checksum has 16 hex digits, so any values give the right length.
    let header = header_bytes(config, &shapes, 0)?;
    Ok(header.len() as u64 + 4 * data as u64)
}

fn metadata(c: &TransformerConfig, sum: u64, file_sum: u64) -> Value {
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
        ("checksum", format!("{CHECKSUM}:{sum:016x}")),
        (FILE_CHECKSUM, format!("{CHECKSUM}:{file_sum:016x}")),
    ];
    let map: BTreeMap<&str, String> = fields.into_iter().collect();
    json!(map)
}

/// The name of the checksum in the metadata, before its value.
const CHECKSUM: &str = "fnv1a64";

/// FNV-1a over `bytes`. Each step is a bijection of the running state for a
/// given byte, so any change of a single byte changes the sum: a flipped bit is
/// always found, and other damage almost always.
fn checksum(bytes: &[u8]) -> u64 {
    checksum_more(0xcbf2_9ce4_8422_2325, bytes)
}

/// FNV-1a continued from `state` over `bytes`.
fn checksum_more(state: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(state, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The error for a checkpoint path where there is no file. A program can
/// recognise it (`downcast_ref`) and say how to make one.
#[derive(Debug)]
pub struct MissingCheckpoint(pub PathBuf);

impl fmt::Display for MissingCheckpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no checkpoint at {}", self.0.display())
    }
}

impl std::error::Error for MissingCheckpoint {}

// ANCHOR: load
/// Loads a checkpoint written by `save_checkpoint` onto `device` for inference
/// (dropout 0). Returns the model built from the config stored in the file; the
/// caller checks that it suits its task. Everything the file claims is checked
/// before the model is allocated.
pub fn load_checkpoint(
    path: &Path,
    device: Device,
) -> Result<(nn::VarStore, Transformer)> {
    let shown = path.display();
    let file = CheckedFile::read(path)?;
    let mut vs = nn::VarStore::new(device);
    let model =
        Transformer::new(vs.root(), file.config).with_context(|| {
            format!("{shown}: its configuration is not a valid model")
        })?;
    tch::no_grad(|| -> Result<()> {
        for (name, mut var) in vs.variables() {
            let values = file.values(&name)?;
            ensure!(
                values.iter().all(|v| v.is_finite()),
                "{shown}: '{name}' holds NaN or infinite values; \
                 the run that wrote it diverged, so train again"
            );
            let t = Tensor::from_slice(&values).view(var.size().as_slice());
            var.copy_(&t.to_device(device));
        }
        Ok(())
    })?;
    vs.freeze();
    Ok((vs, model))
}
// ANCHOR_END: load

/// A checkpoint read whole and checked against its own header: a config within
/// bounds, the tensors that config needs with their shapes, the file's size, and
/// the checksum when there is one.
struct CheckedFile {
    config: TransformerConfig,
    /// name → where its values start in `data`, and how many bytes.
    offsets: BTreeMap<String, (usize, usize)>,
    data: Vec<u8>,
    path: PathBuf,
}

impl CheckedFile {
    fn read(path: &Path) -> Result<CheckedFile> {
        let shown = path.display();
        let (mut file, size) = open_regular_file(path)?;
        let not_ours = || format!("{shown} is not a safetensors checkpoint");
        ensure!(
            size >= 8,
            "{} (it is {size} bytes, too short for even the header's length)",
            not_ours()
        );
        let mut len = [0u8; 8];
        file.read_exact(&mut len).with_context(not_ours)?;
        let n = u64::from_le_bytes(len);
        ensure!(
            n > 1 && n <= MAX_HEADER && 8 + n <= size,
            "{} (its header claims {n} bytes, the file has {size})",
            not_ours()
        );
        let mut raw = vec![0u8; n as usize];
        file.read_exact(&mut raw).with_context(not_ours)?;
        let header = strict_json(&raw).with_context(not_ours)?;
        let config = config_from_header(&header, path)?;
        let offsets = tensor_offsets(&header, &config, path)?;
        let expected =
            8 + n + offsets.values().map(|o| o.1 as u64).sum::<u64>();
        ensure!(
            size == expected,
            "{shown} is {size} bytes, but a checkpoint of its configuration \
             ({}) is {expected} bytes: the file is damaged or not one of ours",
            config.shape_summary()
        );
        let data_len = (size - 8 - n) as usize;
        check_memory(&config, data_len as u64, path)?;
        let mut data = Vec::new();
        data.try_reserve_exact(data_len).map_err(|_| {
            anyhow::anyhow!(
                "{shown}: no memory for its {} of weights",
                crate::output::bytes_text(data_len as u64)
            )
        })?;
        data.resize(data_len, 0);
        file.read_exact(&mut data)
            .with_context(|| format!("cannot read {shown}"))?;
        verify_checksums(&header, (&len, &raw), &data, path)?;
        Ok(CheckedFile {
            config,
            offsets,
            data,
            path: path.to_path_buf(),
        })
    }

    /// The values of tensor `name`, which `read` checked is there.
    fn values(&self, name: &str) -> Result<Vec<f32>> {
        let &(start, len) = self.offsets.get(name).with_context(|| {
            format!("{} has no tensor '{name}'", self.path.display())
        })?;
        let bytes = &self.data[start..start + len];
        let floats = bytes.chunks_exact(4);
        Ok(floats
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

/// Opens `path` if it is a regular file (a FIFO would block, a device never
/// ends), with its size, checked on the opened file (see `output::open_input`).
/// Its size is bounded by what it will claim to hold, checked next.
fn open_regular_file(path: &Path) -> Result<(std::fs::File, u64)> {
    crate::output::open_input(path, u64::MAX, "a checkpoint").map_err(|e| {
        if crate::output::is_not_found(&e) {
            MissingCheckpoint(path.to_path_buf()).into()
        } else {
            e.context(format!("{} is not a checkpoint", path.display()))
        }
    })
}

/// Checks that the header lists exactly the tensors `config` needs, each fp32
/// with its shape, stored back to back; returns where each one's bytes are.
fn tensor_offsets(
    header: &Value,
    config: &TransformerConfig,
    path: &Path,
) -> Result<BTreeMap<String, (usize, usize)>> {
    let shown = path.display();
    let entries = header.as_object().context("no header")?;
    let mut offsets = BTreeMap::new();
    for (name, shape) in expected_tensors(config) {
        let entry = entries
            .get(&name)
            .with_context(|| format!("{shown} has no tensor '{name}'"))?;
        ensure!(
            entry.get("dtype").and_then(Value::as_str) == Some("F32"),
            "{shown}: '{name}' is not fp32"
        );
        let dims: Option<Vec<i64>> = entry
            .get("shape")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_i64).collect());
        ensure!(
            dims.as_ref() == Some(&shape),
            "{shown}: '{name}' has shape {}, the model of its configuration \
             needs {shape:?}",
            entry.get("shape").map_or("none".into(), Value::to_string)
        );
        let at = |i: usize| {
            entry
                .get("data_offsets")
                .and_then(|o| o.get(i))
                .and_then(Value::as_u64)
        };
        let (start, end) = at(0).zip(at(1)).with_context(|| {
            format!("{shown}: '{name}' has no valid data offsets")
        })?;
        let len = 4 * shape.iter().product::<i64>() as u64;
        ensure!(
            end.checked_sub(start) == Some(len),
            "{shown}: '{name}' claims bytes {start}..{end}, but its shape \
             holds {len}"
        );
        offsets.insert(name, (start as usize, len as usize));
    }
    let extra = entries
        .keys()
        .find(|k| *k != "__metadata__" && !offsets.contains_key(*k));
    if let Some(name) = extra {
        bail!("{shown} has a tensor '{name}' that its configuration lacks");
    }
    // Back to back from 0: no tensor overlaps another or lies past the end.
    let mut spans: Vec<(usize, usize)> = offsets.values().copied().collect();
    spans.sort();
    let mut end = 0;
    for (start, len) in spans {
        ensure!(
            start == end,
            "{shown}: its tensors overlap or leave gaps, so it is damaged"
        );
        end = start + len;
    }
    Ok(offsets)
}

/// The checksum of the weights, then the one of the whole file. A file without
/// the second was saved by an older version of the course, and one without
/// either before checksums: each still loads, with a note of what cannot be
/// checked.
fn verify_checksums(
    header: &Value,
    (len, raw): (&[u8], &[u8]),
    data: &[u8],
    path: &Path,
) -> Result<()> {
    let shown = path.display();
    let stored = |key: &str| -> Result<Option<u64>> {
        let field = header
            .get("__metadata__")
            .and_then(|m| m.get(key))
            .and_then(Value::as_str);
        let Some(field) = field else { return Ok(None) };
        let value = field
            .strip_prefix(CHECKSUM)
            .and_then(|s| s.strip_prefix(':'))
            .filter(|s| {
                // Lower case only: "A" for "a" would be a change unseen.
                s.len() == 16
                    && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            })
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .with_context(|| {
                format!("{shown}: its {key} '{field}' is not one of ours")
            })?;
        Ok(Some(value))
    };
    let (data_sum, file_sum) = (stored("checksum")?, stored(FILE_CHECKSUM)?);
    if let Some(sum) = data_sum {
        ensure!(
            checksum(data) == sum,
            "{shown} is damaged: its weights do not match the checksum \
             written with them"
        );
    }
    match (data_sum, file_sum) {
        (_, Some(sum)) => {
            let mut head = len.to_vec();
            head.extend(raw);
            let at = file_checksum_digits(&head).with_context(|| {
                format!("{shown} is damaged: its file checksum is misplaced")
            })?;
            head[at..at + 16].fill(b'0');
            ensure!(
                checksum_more(checksum(&head), data) == sum,
                "{shown} is damaged: its header (config, tensor names, \
                 dtypes, shapes or offsets) does not match the checksum \
                 written with it"
            );
        }
        // Missing checksums are never read as "an older version": removing
        // them is the easiest damage to make, and would switch the checks
        // off. The version is the "format" field, and every file of this
        // format carries both (a file from before them needs training again).
        (weights, None) => {
            bail!(
            "{shown} is damaged, or older than the checks this version needs: \
             it has no {FILE_CHECKSUM}{}, so a change to its config or its \
             weights could not be found; train it again",
            if weights.is_none() { " and no checksum" } else { "" }
        )
        }
    }
    Ok(())
}

/// Parses a header as JSON, refusing a key that appears twice in one object:
/// serde_json (and most readers) would keep the last, so a second
/// "num_heads" or "checksum" could decide what a reader sees while the
/// checksum covers the first.
fn strict_json(bytes: &[u8]) -> Result<Value> {
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    struct Strict(Value);
    struct StrictVisitor;

    impl<'de> Deserialize<'de> for Strict {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(StrictVisitor).map(Strict)
        }
    }

    impl<'de> Visitor<'de> for StrictVisitor {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
        fn visit_seq<A: SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(Strict(v)) = seq.next_element()? {
                items.push(v);
            }
            Ok(Value::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Value, A::Error> {
            let mut object = serde_json::Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if object.contains_key(&key) {
                    return Err(serde::de::Error::custom(format!(
                        "the key '{key}' appears twice in one object"
                    )));
                }
                let Strict(v) = map.next_value()?;
                object.insert(key, v);
            }
            Ok(Value::Object(object))
        }
    }

    let mut de = serde_json::Deserializer::from_slice(bytes);
    let Strict(value) = Strict::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Refuses a load that would not fit in the memory this process can have
/// (free memory, and what `ulimit -v` leaves): its weights are held twice at
/// the peak (the file's bytes and the model), plus one tensor's values on
/// their way and the two position tables.
fn check_memory(
    c: &TransformerConfig,
    data_len: u64,
    path: &Path,
) -> Result<()> {
    let Some(headroom) = crate::limits::memory_headroom() else {
        return Ok(());
    };
    let largest = expected_tensors(c)
        .iter()
        .map(|(_, s)| 4 * s.iter().product::<i64>() as u64)
        .max()
        .unwrap_or(0);
    let tables = 2 * 4 * (c.max_len * c.d_model) as u64;
    let need = 2 * data_len + 2 * largest + tables;
    let text = crate::output::bytes_text;
    ensure!(
        crate::limits::fits(need, headroom),
        "{} would take about {} of memory to load ({}), more than 90 % of \
         the {} available to this process (free memory, or what ulimit -v \
         leaves)",
        path.display(),
        text(need),
        c.shape_summary(),
        text(headroom)
    );
    Ok(())
}

/// The bounds a checkpoint's config must keep, far above the course's model
/// (vocab 13, d_model 128, 2 layers, max_len 14) and far below what would
/// exhaust a machine: each is checked before anything is allocated.
pub const BOUNDS: [(&str, i64); 7] = [
    ("vocab", 1 << 20),
    ("d_model", 1 << 14),
    ("d_ff", 1 << 16),
    ("num_layers", 256),
    ("max_len", 1 << 16),
    // The two position tables are max_len × d_model fp32 each.
    ("max_len × d_model", 1 << 26),
    // 1 GiB of fp32, about 600 times the course's model: each of the bounds
    // above allows models of tens of gigabytes when the others are high.
    ("parameter count", 1 << 28),
];

fn check_bounds(c: &TransformerConfig) -> Result<()> {
    let values = [
        ("vocab", c.src_vocab.max(c.tgt_vocab)),
        ("d_model", c.d_model),
        ("d_ff", c.d_ff),
        ("num_layers", c.num_layers),
        ("max_len", c.max_len),
        ("max_len × d_model", c.max_len.saturating_mul(c.d_model)),
    ];
    // The parameter count is counted last: only the bounds above keep its
    // tensor list short and its products from overflowing.
    let count = |c: &TransformerConfig| -> i64 {
        let shapes = expected_tensors(c);
        shapes.iter().map(|(_, s)| s.iter().product::<i64>()).sum()
    };
    for ((name, value), (_, bound)) in values.into_iter().zip(BOUNDS) {
        ensure!(
            value <= bound,
            "its {name} is {value}, above the {bound} any checkpoint of this \
             course can have"
        );
    }
    c.validate()?;
    let (name, bound) = BOUNDS[6];
    let value = count(c);
    ensure!(
        value <= bound,
        "its {name} is {value}, above the {bound} any checkpoint of this \
         course can have"
    );
    Ok(())
}

/// Every variable a model with `config` has, by VarStore name, with its shape,
/// sorted by name as `checkpoint_bytes` stores them. A test checks that this
/// follows the model's constructors.
pub fn expected_tensors(c: &TransformerConfig) -> Vec<(String, Vec<i64>)> {
    let (d, ff) = (c.d_model, c.d_ff);
    let mut out = Vec::new();
    let sides = [
        ("encoder", c.src_vocab, &["ln1", "ln2"][..], &["mha"][..]),
        (
            "decoder",
            c.tgt_vocab,
            &["ln1", "ln2", "ln3"],
            &["self_mha", "cross_mha"],
        ),
    ];
    for (side, vocab, norms, attentions) in sides {
        out.push((format!("{side}.embed.emb.weight"), vec![vocab, d]));
        for l in 0..c.num_layers {
            let p = format!("{side}.layers.{l}");
            for ln in norms {
                linear(&mut out, &format!("{p}.{ln}"), None, d);
            }
            for mha in attentions {
                for w in ["W_q", "W_k", "W_v", "W_o"] {
                    linear(&mut out, &format!("{p}.{mha}.{w}"), Some(d), d);
                }
            }
            linear(&mut out, &format!("{p}.ffn.lin1"), Some(d), ff);
            linear(&mut out, &format!("{p}.ffn.lin2"), Some(ff), d);
        }
        linear(&mut out, &format!("{side}.ln_final"), None, d);
    }
    linear(&mut out, "out_proj", Some(d), c.tgt_vocab);
    out.sort();
    out
}

/// A weight and a bias of `fan_out` values: a Linear's weight is
/// [fan_out, fan_in], a LayerNorm's (no `fan_in`) is [fan_out].
fn linear(
    out: &mut Vec<(String, Vec<i64>)>,
    p: &str,
    fan_in: Option<i64>,
    fan_out: i64,
) {
    let weight = fan_in.map_or(vec![fan_out], |i| vec![fan_out, i]);
    out.push((format!("{p}.weight"), weight));
    out.push((format!("{p}.bias"), vec![fan_out]));
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
    let unknown = m
        .into_iter()
        .flat_map(|m| m.keys())
        .find(|k| !METADATA_FIELDS.contains(&k.as_str()));
    if let Some(key) = unknown {
        bail!(
            "{shown} is damaged: its metadata has a field '{key}' that no \
             version of this course writes"
        );
    }
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
    let config = TransformerConfig {
        src_vocab: number("src_vocab")?,
        tgt_vocab: number("tgt_vocab")?,
        d_model: number("d_model")?,
        num_heads: number("num_heads")?,
        d_ff,
        num_layers: number("num_layers")?,
        max_len: number("max_len")?,
        dropout: 0.0,
        init,
    };
    check_bounds(&config).map_err(|e| {
        anyhow::anyhow!("{shown} cannot be a checkpoint of this course: {e}")
    })?;
    Ok(config)
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
