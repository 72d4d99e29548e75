//! The book's attention explorer runs the model in JavaScript
//! (book/src/explorer/model.js). These tests run that code under Node
//! (tests/explorer/parity.js) and hold it to the Rust model on the same weights:
//!
//! - logits within 1e-3 and attention weights within 1e-4 (absolute), on
//!   teacher-forced passes over padded validation rows, with and without heads
//!   switched off;
//! - identical greedy outputs on the first 300 samples of the recipe's
//!   validation set (seed 1); 300 rather than 1,000 keeps the test to seconds
//!   in a debug build, the JavaScript side being the slow one;
//! - the same files refused, with the same sentences, as `load_checkpoint`.
//!
//! The weights are the shipped ones, book/src/explorer/weights.js (fp16). Without
//! Node the tests print "skipped: no node" and pass, except under CI=true, where
//! a missing Node is a failure.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use tch::{nn, Device, Kind, Tensor};
use transformer_course::config::{Init, TransformerConfig};
use transformer_course::data::{make_dataset, row};
use transformer_course::generate::greedy_decode;
use transformer_course::transformer::{
    make_causal_mask, make_padding_mask, Transformer,
};
use transformer_course::vocab::{EOS_ID, SEQ_LEN};
use workbench::checkpoint::{
    checkpoint_bytes, ensure_reverse_task, load_checkpoint, save_checkpoint,
};

mod common;
use common::model_with;

const LOGIT_TOLERANCE: f64 = 1e-3;
const WEIGHT_TOLERANCE: f64 = 1e-4;
const GREEDY_SAMPLES: usize = 300;

/// Whether Node is here. Without it the test is skipped, unless CI=true.
fn have_node() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but there is no `node` on PATH: the explorer's parity \
             test must run in CI (Debian: apt-get install nodejs)"
        );
        println!("skipped: no node");
    }
    ok
}

/// An empty folder of this test's own.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("course-explorer-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the Node driver on `request`; returns its response.
fn node(dir: &Path, request: &Value) -> Value {
    let (req, resp) = (dir.join("request.json"), dir.join("response.json"));
    std::fs::write(&req, request.to_string()).unwrap();
    let out = Command::new("node")
        .arg(common::repo_root().join("tests/explorer/parity.js"))
        .args([&req, &resp])
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "the explorer's JavaScript failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&std::fs::read(&resp).unwrap()).unwrap()
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for chunk in text.as_bytes().chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != b'=')
            .fold(0, |n, (i, &c)| n | value(c) << (18 - 6 * i));
        let bytes = chunk.iter().filter(|&&c| c != b'=').count() - 1;
        out.extend(&n.to_be_bytes()[1..1 + bytes]);
    }
    out
}

/// The shipped weights (book/src/explorer/weights.js), in fp32, saved as a
/// checkpoint of 09_train_reverse would be, into `dir`.
fn shipped_as_checkpoint(dir: &Path) -> PathBuf {
    let path = common::repo_root().join("book/src/explorer/weights.js");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}): export the trained checkpoint with \
             `scripts/regen-outputs.sh --only export_explorer`",
            path.display()
        )
    });
    let start = text
        .find("globalThis.EXPLORER_WEIGHTS = ")
        .expect("weights.js sets EXPLORER_WEIGHTS")
        + "globalThis.EXPLORER_WEIGHTS = ".len();
    let shipped: Value =
        serde_json::from_str(text[start..].trim_end().trim_end_matches(';'))
            .unwrap();
    let bytes = base64_decode(shipped["safetensors_base64"].as_str().unwrap());
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let meta = &header["__metadata__"];
    let number = |k: &str| meta[k].as_str().unwrap().parse::<i64>().unwrap();
    let config = TransformerConfig {
        src_vocab: number("src_vocab"),
        tgt_vocab: number("tgt_vocab"),
        d_model: number("d_model"),
        num_heads: number("num_heads"),
        d_ff: number("d_ff"),
        num_layers: number("num_layers"),
        max_len: number("max_len"),
        dropout: 0.0,
        init: Init::Paper,
    };
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let vs = nn::VarStore::new(Device::Cpu);
    let _model = Transformer::new(vs.root(), config).unwrap();
    tch::no_grad(|| {
        for (name, mut var) in vs.variables() {
            let view = tensors.tensor(&name).unwrap();
            assert_eq!(view.dtype(), safetensors::Dtype::F16, "{name}");
            let t =
                Tensor::from_data_size(view.data(), &var.size(), Kind::Half);
            var.copy_(&t.to_kind(Kind::Float));
        }
    });
    let out = dir.join("shipped.safetensors");
    save_checkpoint(&vs, &config, &out).unwrap();
    out
}

/// The decoder's and encoder's outputs of one teacher-forced pass, flattened.
struct Pass {
    logits: Vec<f64>,
    encoder: Vec<Vec<f64>>,
    decoder_self: Vec<Vec<f64>>,
    cross: Vec<Vec<f64>>,
}

fn flat(t: &Tensor) -> Vec<f64> {
    Vec::<f64>::try_from(&t.to_kind(Kind::Double).flatten(0, -1)).unwrap()
}

fn rust_pass(model: &Transformer, src: &[i64], tgt_in: &[i64]) -> Pass {
    let src = Tensor::from_slice(src).unsqueeze(0); // [1, Ls]
    let tgt = Tensor::from_slice(tgt_in).unsqueeze(0); // [1, Lt]
    tch::no_grad(|| {
        let src_mask = make_padding_mask(&src);
        let (memory, enc) =
            model.encoder.forward_with_weights(&src, &src_mask, false);
        let (logits, dec) = model.decode_with_weights(
            &tgt,
            &memory,
            &src_mask,
            make_causal_mask,
            false,
        );
        Pass {
            logits: flat(&logits),
            encoder: enc.iter().map(flat).collect(),
            decoder_self: dec.iter().map(|w| flat(&w.self_attn)).collect(),
            cross: dec.iter().map(|w| flat(&w.cross_attn)).collect(),
        }
    })
}

fn js_pass(v: &Value) -> Pass {
    let nums = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let layers =
        |v: &Value| v.as_array().unwrap().iter().map(nums).collect::<Vec<_>>();
    Pass {
        logits: nums(&v["logits"]),
        encoder: layers(&v["encoder"]),
        decoder_self: layers(&v["decoder_self"]),
        cross: layers(&v["cross"]),
    }
}

fn max_diff(a: &[f64], b: &[f64], what: &str) -> f64 {
    assert_eq!(a.len(), b.len(), "{what}: not the same number of values");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn assert_same_pass(rust: &Pass, js: &Pass, what: &str) {
    let d = max_diff(&rust.logits, &js.logits, what);
    assert!(
        d <= LOGIT_TOLERANCE,
        "{what}: logits differ by {d:.2e} (tolerance {LOGIT_TOLERANCE:e})"
    );
    for (kind, r, j) in [
        ("encoder self-attention", &rust.encoder, &js.encoder),
        (
            "decoder self-attention",
            &rust.decoder_self,
            &js.decoder_self,
        ),
        ("cross-attention", &rust.cross, &js.cross),
    ] {
        assert_eq!(r.len(), j.len(), "{what}: {kind}: number of layers");
        for (layer, (r, j)) in r.iter().zip(j).enumerate() {
            let d = max_diff(r, j, what);
            assert!(
                d <= WEIGHT_TOLERANCE,
                "{what}: {kind} of layer {layer} differs by {d:.2e} \
                 (tolerance {WEIGHT_TOLERANCE:e})"
            );
        }
    }
}

/// Heads switched off, as (sublayer, layer, head) with sublayer one of
/// "encoder", "decoder_self", "cross".
type Off<'a> = &'a [(&'a str, i64, i64)];

/// The page's description of `off`.
fn off_json(config: &TransformerConfig, off: Off) -> Value {
    let mut v = json!({});
    for sub in ["encoder", "decoder_self", "cross"] {
        let layers: Vec<Vec<bool>> = (0..config.num_layers)
            .map(|l| {
                (0..config.num_heads)
                    .map(|h| off.contains(&(sub, l, h)))
                    .collect()
            })
            .collect();
        v[sub] = json!(layers);
    }
    v
}

/// The model with the heads `off` switched off the way exercise
/// ex02_head_ablation does it, by another road: W_o of merged heads is
/// Σ_h W_o[:, columns of h] · head_h, so zeroing a head's output before W_o
/// equals zeroing its d_k input columns of W_o.
fn ablated(
    vs: &nn::VarStore,
    config: TransformerConfig,
    off: Off,
) -> Transformer {
    let mut vs2 = nn::VarStore::new(Device::Cpu);
    let model = Transformer::new(vs2.root(), config).unwrap();
    vs2.copy(vs).unwrap();
    let vars = vs2.variables();
    let d_k = config.d_k();
    tch::no_grad(|| {
        for &(sub, layer, head) in off {
            let module = match sub {
                "encoder" => format!("encoder.layers.{layer}.mha"),
                "decoder_self" => format!("decoder.layers.{layer}.self_mha"),
                _ => format!("decoder.layers.{layer}.cross_mha"),
            };
            let w = &vars[&format!("{module}.W_o.weight")];
            let _ = w.narrow(1, head * d_k, d_k).zero_();
        }
    });
    model
}

/// A greedy output up to and with its first EOS.
fn until_eos(tokens: &[i64]) -> Vec<i64> {
    match tokens.iter().position(|&t| t == EOS_ID) {
        Some(i) => tokens[..=i].to_vec(),
        None => tokens.to_vec(),
    }
}

#[test]
fn the_page_model_matches_the_rust_model_on_the_shipped_weights() {
    if !have_node() {
        return;
    }
    let dir = temp_dir("shipped");
    let ckpt = shipped_as_checkpoint(&dir);
    let (vs, model) = load_checkpoint(&ckpt, Device::Cpu).unwrap();
    let config = model.config;

    // The recipe's validation set: reverse_data's seed data_seed + 1 = 1.
    let val = make_dataset(GREEDY_SAMPLES, 1);
    let digits: Vec<Vec<i64>> = (0..GREEDY_SAMPLES as i64)
        .map(|i| transformer_course::vocab::digits_of(&row(&val.src, i)))
        .collect();
    let rust_greedy = greedy_decode(&model, &val.src, SEQ_LEN);

    // Every layer's cross-attention off breaks the reversal; the page's
    // ablation has to agree with the Rust one on what it decodes instead.
    let cross_off: Vec<(&str, i64, i64)> = (0..config.num_layers)
        .flat_map(|l| (0..config.num_heads).map(move |h| ("cross", l, h)))
        .collect();
    let broken = ablated(&vs, config, &cross_off);
    let n_broken = 50;
    let rust_broken =
        greedy_decode(&broken, &val.src.narrow(0, 0, n_broken), SEQ_LEN);

    let ablations: [Off; 4] = [
        &[],
        &[("cross", 0, 1)],
        &[("encoder", 1, 0), ("decoder_self", 1, 3), ("cross", 1, 2)],
        &cross_off,
    ];
    let forward_rows = [0i64, 1, 2, 3, 4, 5, 6, 7];
    let mut forward = Vec::new();
    let mut expected = Vec::new();
    for (a, off) in ablations.iter().enumerate() {
        let m = ablated(&vs, config, off);
        for &i in &forward_rows {
            let src = row(&val.src, i);
            let tgt = row(&val.tgt, i);
            let tgt_in = &tgt[..SEQ_LEN - 1]; // teacher forcing, PAD included
            forward.push(json!({
                "src": src, "tgt_in": tgt_in, "off": off_json(&config, off)
            }));
            expected.push((a, i, rust_pass(&m, &src, tgt_in)));
        }
    }
    let mut greedy: Vec<Value> = digits
        .iter()
        .map(|d| json!({ "digits": d, "off": null }))
        .collect();
    let off_cross = off_json(&config, &cross_off);
    greedy.extend(
        digits[..n_broken as usize]
            .iter()
            .map(|d| json!({ "digits": d, "off": off_cross })),
    );
    let weights_js = common::repo_root().join("book/src/explorer/weights.js");
    let response = node(
        &dir,
        &json!({
            "weights_js": weights_js,
            "greedy": greedy,
            "forward": forward,
            "same_as_checkpoint": ckpt,
        }),
    );
    println!(
        "node: {} greedy decodes and {} passes in {:.0} ms",
        greedy.len(),
        forward.len(),
        response["ms"].as_f64().unwrap()
    );

    // The fp16 file read by the page and the fp32 checkpoint it became: the same.
    assert_eq!(response["same_as_checkpoint"].as_f64(), Some(0.0));

    for ((a, i, rust), js) in
        expected.iter().zip(response["forward"].as_array().unwrap())
    {
        let what = format!("validation row {i}, ablation {:?}", ablations[*a]);
        assert_same_pass(rust, &js_pass(js), &what);
    }

    let js_greedy: Vec<Vec<i64>> = response["greedy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect()
        })
        .collect();
    let (plain, cut) = js_greedy.split_at(GREEDY_SAMPLES);
    let mut reversed = 0;
    for (i, js) in plain.iter().enumerate() {
        let rust = until_eos(&row(&rust_greedy, i as i64));
        assert_eq!(&rust, js, "greedy output of {:?}", digits[i]);
        let want: Vec<i64> = digits[i].iter().rev().copied().collect();
        reversed += (transformer_course::vocab::digits_of(js) == want) as usize;
    }
    let mut still = 0;
    for (i, js) in cut.iter().enumerate() {
        let rust = until_eos(&row(&rust_broken, i as i64));
        assert_eq!(
            &rust, js,
            "greedy output of {:?} with every cross-attention head off",
            digits[i]
        );
        let want: Vec<i64> = digits[i].iter().rev().copied().collect();
        still += (transformer_course::vocab::digits_of(js) == want) as usize;
    }
    println!(
        "reversed: {reversed} of {GREEDY_SAMPLES}; with cross-attention off: \
         {still} of {n_broken}"
    );
    // The shipped weights are a trained model, not a stub.
    assert!(reversed * 10 >= GREEDY_SAMPLES * 9, "{reversed} reversed");
    assert!(still * 2 < n_broken as usize, "{still} still reversed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_page_reads_a_checkpoint_of_another_shape() {
    if !have_node() {
        return;
    }
    let dir = temp_dir("small");
    // What a reader might train: `09_train_reverse --d-model 32 --heads 2 …`.
    let config = TransformerConfig {
        d_model: 32,
        num_heads: 2,
        d_ff: 48,
        num_layers: 1,
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    };
    let (vs, _) = model_with(config, 7);
    let ckpt = dir.join("small.safetensors");
    save_checkpoint(&vs, &config, &ckpt).unwrap();
    let (_vs, model) = load_checkpoint(&ckpt, Device::Cpu).unwrap();
    let data = make_dataset(4, 5);
    let (mut forward, mut expected) = (Vec::new(), Vec::new());
    for i in 0..4 {
        let (src, tgt) = (row(&data.src, i), row(&data.tgt, i));
        let tgt_in = &tgt[..SEQ_LEN - 1];
        forward.push(json!({ "src": src, "tgt_in": tgt_in, "off": null }));
        expected.push(rust_pass(&model, &src, tgt_in));
    }
    let response =
        node(&dir, &json!({ "checkpoint": ckpt, "forward": forward }));
    for (i, (rust, js)) in expected
        .iter()
        .zip(response["forward"].as_array().unwrap())
        .enumerate()
    {
        assert_same_pass(rust, &js_pass(js), &format!("small model, row {i}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `good` with its header's bytes replaced by `edit`'s, the length and the
/// padding written again and the weights kept: a crafted file.
fn with_header_bytes(
    good: &[u8],
    edit: impl FnOnce(Vec<u8>) -> Vec<u8>,
) -> Vec<u8> {
    let n = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    let text = good[8..8 + n].trim_ascii_end().to_vec();
    let mut header = edit(text);
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header);
    out.extend(&good[8 + n..]);
    out
}

/// `good` with its header's JSON text replaced by `edit`'s.
fn with_header_text(
    good: &[u8],
    edit: impl FnOnce(String) -> String,
) -> Vec<u8> {
    with_header_bytes(good, |b| {
        edit(String::from_utf8(b).unwrap()).into_bytes()
    })
}

/// `good` with its header changed by `edit` on the parsed JSON.
fn with_header(good: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    with_header_text(good, |t| {
        let mut v: Value = serde_json::from_str(&t).unwrap();
        edit(&mut v);
        v.to_string()
    })
}

/// A metadata field of `good` set to `value`.
fn with_meta(good: &[u8], key: &str, value: &str) -> Vec<u8> {
    with_header(good, |h| h["__metadata__"][key] = json!(value))
}

/// `good` with a key `"deep"` nested in `levels` arrays added to a tensor's
/// entry, where the loader reads only `dtype`, `shape` and `data_offsets` (in
/// the metadata, a field of that name would be refused as unknown).
fn nested(good: &[u8], levels: usize) -> Vec<u8> {
    with_header_text(good, |t| {
        let deep = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        t.replacen(
            "\"out_proj.bias\":{",
            &format!("\"out_proj.bias\":{{\"deep\":{deep},"),
            1,
        )
    })
}

/// `bytes` with the first `from` in its header replaced by `to`, of the same
/// length: the file's length, padding and checksums untouched.
fn replaced(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let header_end =
        8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let at = bytes[..header_end]
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap_or_else(|| panic!("no {from} in the header"));
    let mut out = bytes.to_vec();
    out[at..at + from.len()].copy_from_slice(to.as_bytes());
    out
}

/// `bytes` with its whole-file checksum written again for what the file now
/// holds, as workbench/src/checkpoint.rs `seal` writes it on a save (FNV-1a
/// over every byte, its own 16 digits read as zeros): a crafted file whose
/// point is a rule of the header's reading, not damage the checksum finds.
fn sealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let key = b"\"file_checksum\":\"fnv1a64:";
    let header_end =
        8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let at = bytes[..header_end]
        .windows(key.len())
        .position(|w| w == key)
        .expect("a file checksum in the header")
        + key.len();
    bytes[at..at + 16].fill(b'0');
    let sum = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    bytes[at..at + 16].copy_from_slice(format!("{sum:016x}").as_bytes());
    bytes
}

/// What a crafted file must do on both sides.
#[derive(Clone, Copy)]
enum Want {
    /// Load, with no note (no file that loads has one since a file without
    /// its checksums is refused).
    Loads,
    /// Be refused, with a sentence that contains the phrase.
    Refused(&'static str),
}

/// The notes `load_checkpoint` prints for `path` (its "note: " lines on
/// stderr), read from a run of 10_greedy_decode on it: they go to stderr, which
/// this process cannot read back from its own calls.
fn rust_notes(path: &Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_10_greedy_decode"))
        .arg("--checkpoint")
        .arg(path)
        .args(["--device", "cpu", "7", "3", "1"])
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("10_greedy_decode runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "10_greedy_decode: {stderr}");
    let notes = stderr.lines().filter(|l| l.starts_with("note: "));
    notes.map(str::to_string).collect()
}

/// Every file below is tried by `load_checkpoint` + `ensure_reverse_task` and
/// by the page's loader (Node): both load it with the same note or none, or
/// both refuse it with the same sentence (anyhow's `{}`: the outermost
/// message). That note or sentence has to contain the phrase given, so that
/// each file is refused (or loaded) for the reason it was made for. The crafted
/// ones are the tests of each check in workbench/src/checkpoint.rs. Its file
/// checksum covers the whole header, so a file edited to reach a rule of the
/// header's reading (a "+1", deep nesting that fits, junk in a shape) is
/// `sealed` again after the edit; one edited to test the config, the tensors or
/// the checksums' own form is refused before the file checksum is compared.
#[test]
fn the_page_refuses_what_load_checkpoint_refuses() {
    if !have_node() {
        return;
    }
    let dir = temp_dir("refuse");
    let config = TransformerConfig {
        d_model: 16,
        num_heads: 4,
        d_ff: 32,
        num_layers: 1,
        dropout: 0.0,
        ..TransformerConfig::reverse_task()
    };
    let (vs, _) = model_with(config, 3);
    let good = checkpoint_bytes(&vs, &config).unwrap();
    let header_end =
        8 + u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    let offsets = |h: &Value, name: &str| h[name]["data_offsets"].clone();
    let metadata = |bytes: &[u8], key: &str| {
        let h: Value = serde_json::from_slice(&bytes[8..header_end]).unwrap();
        h["__metadata__"][key].as_str().unwrap().to_string()
    };
    let without = |bytes: &[u8], keys: &[&str]| {
        with_header(bytes, |h| {
            let meta = h["__metadata__"].as_object_mut().unwrap();
            keys.iter().for_each(|k| _ = meta.remove(*k));
        })
    };
    let flip_a_weight = |mut bytes: Vec<u8>| {
        let end = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap());
        bytes[end as usize + 5] ^= 0x10;
        bytes
    };

    let mut cases: Vec<(&str, Vec<u8>, Want)> = Vec::new();
    let mut refuse =
        |name, bytes, phrase| cases.push((name, bytes, Want::Refused(phrase)));

    // The file's frame: its 8-byte length, its JSON, its size.
    refuse("short", b"abc".to_vec(), "is not a safetensors checkpoint");
    refuse(
        "text",
        b"a text file, not weights\n".to_vec(),
        "is not a safetensors checkpoint (its header claims",
    );
    let mut huge_len = good.clone();
    huge_len[..8].copy_from_slice(&(u64::MAX - 6).to_le_bytes());
    refuse(
        "huge-header-length",
        huge_len,
        "its header claims 18446744073709551609",
    );
    let mut header = good.clone();
    header[8] = b'x';
    refuse("bad-header", header, "is not a safetensors checkpoint");
    refuse(
        "truncated",
        good[..good.len() - 100].to_vec(),
        "the file is damaged or not one of ours",
    );
    // What serde_json refuses and JSON.parse would take.
    refuse(
        "too-deep",
        nested(&good, 126),
        "is not a safetensors checkpoint",
    );
    refuse(
        "lone-surrogate",
        with_header_text(&good, |t| {
            t.replacen("\"format\"", "\"x\":\"\\ud800\",\"format\"", 1)
        }),
        "is not a safetensors checkpoint",
    );
    refuse(
        "invalid-utf8",
        with_header_bytes(&good, |mut b| {
            let at = b.windows(8).position(|w| w == b"\"format\"").unwrap();
            b.splice(at..at, b"\"x\":\"\xff\",".iter().copied());
            b
        }),
        "is not a safetensors checkpoint",
    );
    refuse(
        "not-an-object",
        with_header_text(&good, |_| "[1,2]".into()),
        "is not a checkpoint of this course",
    );

    // The config: format, fields, bounds, TransformerConfig::validate.
    let mut foreign = good.clone();
    let at = foreign[..header_end]
        .windows(20)
        .position(|w| w == b"transformer-course/1")
        .unwrap();
    foreign[at + 19] = b'9';
    refuse("foreign", foreign, "is not a checkpoint of this course");
    // A renamed field: unknown, and refused as such before the config is read
    // (which would say max_len is missing).
    refuse(
        "unknown-field",
        with_header(&good, |h| {
            let meta = h["__metadata__"].as_object_mut().unwrap();
            let max_len = meta.remove("max_len").unwrap();
            meta.insert("max_length".into(), max_len);
        }),
        "its metadata has a field 'max_length' that no version of this \
         course writes",
    );
    refuse(
        "huge-max-len",
        with_meta(&good, "max_len", "1000000000"),
        "its max_len is 1000000000, above the 65536",
    );
    refuse(
        "huge-area",
        with_header(&good, |h| {
            h["__metadata__"]["max_len"] = json!("65536");
            h["__metadata__"]["d_model"] = json!("16384");
        }),
        "its max_len × d_model is 1073741824, above the 67108864",
    );
    // Within every bound on one number: 1.3 billion parameters, 5 GB of fp32.
    refuse(
        "huge-parameter-count",
        with_header(&good, |h| {
            let m = &mut h["__metadata__"];
            (m["d_model"], m["num_heads"]) = (json!("8192"), json!("8"));
            m["d_ff"] = json!("16384");
        }),
        "its parameter count is 1342758925, above the 268435456",
    );
    refuse(
        "i64-overflow",
        with_meta(&good, "d_model", "9223372036854775808"),
        "metadata field 'd_model' is missing or not a number",
    );
    refuse(
        "negative",
        with_meta(&good, "d_model", "-9223372036854775807"),
        "d_model must be positive and even (sin/cos pairs), got -9223372036854775807",
    );
    refuse(
        "heads-do-not-divide",
        with_meta(&good, "num_heads", "3"),
        "d_model (16) must be divisible by num_heads (3)",
    );
    refuse(
        "d-ff-not-a-number",
        with_meta(&good, "d_ff", "32.0"),
        "metadata field 'dff' is missing or not a number",
    );
    refuse(
        "unknown-init",
        with_meta(&good, "init", "xavier"),
        "unknown init 'xavier'",
    );

    // The tensors: each one the config needs, nothing else, back to back.
    refuse(
        "missing",
        with_header(&good, |h| {
            h.as_object_mut().unwrap().remove("out_proj.bias");
        }),
        "has no tensor 'out_proj.bias'",
    );
    refuse(
        "extra",
        with_header(&good, |h| {
            h["extra.weight"] =
                json!({"dtype": "F32", "shape": [1], "data_offsets": [0, 4]});
        }),
        "has a tensor 'extra.weight' that its configuration lacks",
    );
    refuse(
        "overlap",
        with_header(&good, |h| {
            let at = offsets(h, "decoder.layers.0.ln1.bias");
            h["decoder.layers.0.ln1.weight"]["data_offsets"] = at;
        }),
        "its tensors overlap or leave gaps",
    );
    refuse(
        "not-fp32",
        with_header(&good, |h| h["out_proj.bias"]["dtype"] = json!("F16")),
        "'out_proj.bias' is not fp32",
    );
    refuse(
        "float-shape",
        with_header(&good, |h| h["out_proj.bias"]["shape"] = json!([13.0])),
        "'out_proj.bias' has shape [13.0], the model of its configuration needs [13]",
    );
    refuse(
        "offsets-too-long",
        with_header(&good, |h| {
            let at = offsets(h, "out_proj.bias");
            let end = at[1].as_u64().unwrap() + 4;
            h["out_proj.bias"]["data_offsets"] = json!([at[0], end]);
        }),
        "'out_proj.bias' claims bytes",
    );
    refuse(
        "negative-offsets",
        with_header(&good, |h| {
            h["out_proj.bias"]["data_offsets"] = json!([-4, 48])
        }),
        "'out_proj.bias' has no valid data offsets",
    );

    // The checksums: each one's form (16 lower-case hex digits, read before
    // either is compared), the weights', then the whole file's.
    let digits = metadata(&good, "checksum")["fnv1a64:".len()..].to_string();
    let file_digits =
        metadata(&good, "file_checksum")["fnv1a64:".len()..].to_string();
    for d in [&digits, &file_digits] {
        // Upper case must change something for the cases below to mean it.
        assert_ne!(d.to_uppercase(), *d, "{d} has no letter");
    }
    refuse(
        "bad-checksum",
        with_meta(&good, "checksum", "fnv1a64:not-hex"),
        "its checksum 'fnv1a64:not-hex' is not one of ours",
    );
    refuse(
        "checksum-upper-case",
        with_meta(
            &good,
            "checksum",
            &format!("fnv1a64:{}", digits.to_uppercase()),
        ),
        "its checksum 'fnv1a64:",
    );
    refuse(
        "checksum-plus-sign",
        with_meta(&good, "checksum", &format!("fnv1a64:+{}", &digits[1..])),
        "its checksum 'fnv1a64:+",
    );
    refuse(
        "file-checksum-upper-case",
        with_meta(
            &good,
            "file_checksum",
            &format!("fnv1a64:{}", file_digits.to_uppercase()),
        ),
        "its file_checksum 'fnv1a64:",
    );
    refuse(
        "file-checksum-short",
        with_meta(
            &good,
            "file_checksum",
            &format!("fnv1a64:{}", &file_digits[1..]),
        ),
        "is not one of ours",
    );
    let mut flipped = good.clone();
    flipped[header_end + 5] ^= 0x10;
    refuse("flipped", flipped, "do not match the checksum");
    // One byte of the config: a model of the same tensors, with wrong answers.
    let header_damage = "is damaged: its header (config, tensor names, \
                         dtypes, shapes or offsets) does not match the \
                         checksum written with it";
    let eight_heads =
        replaced(&good, "\"num_heads\":\"4\"", "\"num_heads\":\"8\"");
    refuse("num-heads-8", eight_heads.clone(), header_damage);
    refuse(
        "swapped-offsets",
        with_header(&good, |h| {
            let q = "encoder.layers.0.mha.W_q.weight";
            let k = "encoder.layers.0.mha.W_k.weight";
            let (oq, ok) = (offsets(h, q), offsets(h, k));
            (h[q]["data_offsets"], h[k]["data_offsets"]) = (ok, oq);
        }),
        header_damage,
    );
    // The digits are found in the header's bytes, as the one such text.
    refuse(
        "file-checksum-twice",
        with_header(&good, |h| {
            h["out_proj.bias"]["file_checksum"] =
                json!("fnv1a64:0000000000000000")
        }),
        "its file checksum is misplaced",
    );
    refuse(
        "file-checksum-escaped",
        with_header_text(&good, |t| {
            t.replacen("\"file_checksum\"", "\"file\\u005fchecksum\"", 1)
        }),
        "its file checksum is misplaced",
    );
    // A key written twice: the last one would win in most readers.
    refuse(
        "key-twice",
        with_header_text(&good, |t| {
            t.replacen(
                "\"num_heads\":",
                "\"num_heads\":\"8\",\"num_heads\":",
                1,
            )
        }),
        // (the outermost sentence; the JSON is otherwise whole, so the
        // second key is why)
        "is not a safetensors checkpoint",
    );
    // Several kinds of damage: the one Rust names first is named.
    refuse(
        "flipped-and-num-heads-8",
        flip_a_weight(eight_heads.clone()),
        "its weights do not match the checksum",
    );
    refuse(
        "flipped-and-file-checksum-short",
        flip_a_weight(with_meta(
            &good,
            "file_checksum",
            &format!("fnv1a64:{}", &file_digits[1..]),
        )),
        "its file_checksum 'fnv1a64:",
    );

    // The weights' values, and the task.
    // A diverged run: NaN weights, saved with their own checksums.
    let nan = {
        let (vs, _) = model_with(config, 3);
        tch::no_grad(|| {
            let (_, v) = vs.variables().into_iter().next().unwrap();
            let _ = v.shallow_clone().fill_(f64::NAN);
        });
        checkpoint_bytes(&vs, &config).unwrap()
    };
    refuse("nan", nan, "holds NaN or infinite values");
    let other_task = TransformerConfig {
        src_vocab: 20,
        tgt_vocab: 20,
        ..config
    };
    let (vs20, _) = model_with(other_task, 3);
    refuse(
        "other-task",
        checkpoint_bytes(&vs20, &other_task).unwrap(),
        "was trained for another task",
    );

    // What Rust loads, however odd, the page loads too, with the same note.
    let stripped = "is damaged, or older than the checks this version needs: \
                    it has no file_checksum";
    for (name, bytes, want) in [
        ("good", good.clone(), Want::Loads),
        (
            "plus-sign",
            sealed(with_meta(&good, "num_layers", "+1")),
            Want::Loads,
        ),
        ("deep-but-fits", sealed(nested(&good, 125)), Want::Loads),
        // Rust keeps a shape's i64 entries and drops the others (filter_map).
        (
            "shape-with-junk",
            sealed(with_header(&good, |h| {
                h["out_proj.bias"]["shape"] = json!(["x", 13])
            })),
            Want::Loads,
        ),
        // A checksum that is not a string is none (as_str); the file's
        // checksum still covers the weights.
        (
            "checksum-not-a-string",
            sealed(with_header(&good, |h| {
                h["__metadata__"]["checksum"] = json!(5)
            })),
            Want::Loads,
        ),
        // Without the file's checksum, refused: read as "an older version",
        // a file whose checksums were removed would load unchecked.
        (
            "weights-only-checksum",
            without(&good, &["file_checksum"]),
            Want::Refused(stripped),
        ),
        (
            "weights-only-num-heads-8",
            without(&eight_heads, &["file_checksum"]),
            Want::Refused(stripped),
        ),
        (
            "no-checksum",
            without(&good, &["checksum", "file_checksum"]),
            Want::Refused(stripped),
        ),
    ] {
        cases.push((name, bytes, want));
    }

    let mut paths = Vec::new();
    let mut rust_says = Vec::new();
    for (name, bytes, want) in &cases {
        let path = dir.join(format!("{name}.safetensors"));
        std::fs::write(&path, bytes).unwrap();
        let shown = |text: String| {
            text.replace(
                &path.display().to_string(),
                &format!("{name}.safetensors"),
            )
        };
        let rust = load_checkpoint(&path, Device::Cpu)
            .and_then(|(_vs, m)| ensure_reverse_task(&m, &path).map(|_| ()));
        // Ok(the note, or None), or Err(the refusal).
        let said = match (rust, want) {
            (Ok(()), Want::Refused(_)) => panic!("Rust loaded the {name} file"),
            (Err(e), Want::Loads) => {
                panic!("Rust refused the {name} file: {e:#}")
            }
            (Err(e), Want::Refused(phrase)) => {
                let said = shown(e.to_string());
                assert!(said.contains(phrase), "Rust, {name}: {said}");
                Err(said)
            }
            (Ok(()), Want::Loads) => {
                let notes = rust_notes(&path);
                assert!(notes.is_empty(), "Rust's notes on {name}: {notes:?}");
                Ok(None::<String>)
            }
        };
        rust_says.push(said);
        paths.push(path);
    }
    let response = node(&dir, &json!({ "refuse": paths }));
    for (((name, _, _), rust), page) in cases
        .iter()
        .zip(&rust_says)
        .zip(response["refuse"].as_array().unwrap())
    {
        let said = page["message"].as_str();
        let note = page["note"].as_str();
        println!(
            "{name}: {:.0} ms: {}",
            page["ms"].as_f64().unwrap(),
            said.or(note).unwrap_or("loaded")
        );
        match rust {
            Ok(rust) => {
                assert_eq!(said, None, "the page refused the {name} file");
                // Rust's stderr line is "note: " and the page's note.
                let page = note.map(|n| format!("note: {n}"));
                assert_eq!(
                    page.as_deref(),
                    rust.as_deref(),
                    "the page and Rust note {name} differently"
                );
            }
            Err(rust) => {
                let said = said.unwrap_or_else(|| {
                    panic!("the page loaded the {name} file instead of refusing it")
                });
                assert_eq!(
                    said, rust,
                    "the page and Rust refuse {name} differently"
                );
                // As fast as Rust: no file here takes the page more than a
                // moment (a huge claimed max_len once took it 15 s).
                let ms = page["ms"].as_f64().unwrap();
                assert!(
                    ms < 1000.0,
                    "the page took {ms:.0} ms to refuse {name}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
