//! What the chapter programs share and the lessons do not: choosing the device and
//! the thread count, checking flags, turning every error (libtorch's panics
//! included) into one line, progress bars and number formatting.
use std::any::Any;
use std::io::IsTerminal;

use anyhow::{bail, Result};
use tch::Device;

// ANCHOR: device
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// CUDA when libtorch sees a GPU, else the CPU.
    Auto,
    Cpu,
    Cuda,
}

pub fn select_device(choice: DeviceChoice) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Auto => Ok(Device::cuda_if_available()),
        DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(Device::Cuda(0)),
        DeviceChoice::Cuda => bail!(
            "--device cuda was asked for, but libtorch sees no CUDA device \
             (no GPU, no driver, or a CPU-only libtorch); use --device cpu"
        ),
    }
}
// ANCHOR_END: device

/// Runs a program's body and exits: 0 on success; on an error or a panic (which
/// is how tch reports libtorch errors, out-of-memory included), one line on
/// stderr and exit code 1, never a backtrace or Rust's debug format.
pub fn run_main(body: impl FnOnce() -> Result<()>) -> ! {
    std::panic::set_hook(Box::new(|_| {})); // reported below, in one line
    let code =
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                eprintln!("error: {}", first_line(&format!("{e:#}")));
                1
            }
            Err(panic) => {
                eprintln!("error: {}", panic_message(panic.as_ref()));
                1
            }
        };
    std::process::exit(code)
}

/// The one useful sentence of a panic payload: libtorch's message without the
/// C++ stack trace that follows it.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the program stopped unexpectedly".into());
    torch_error_sentence(&text)
}

/// `Torch("CUDA out of memory. Tried to … \nException raised from …")` →
/// "libtorch: CUDA out of memory. Tried to …"
pub fn torch_error_sentence(text: &str) -> String {
    let text = text
        .trim_start_matches("called `Result::unwrap()` on an `Err` value: ");
    match text.strip_prefix("Torch(\"") {
        Some(inner) => {
            let inner = inner.replace("\\n", "\n").replace("\\\"", "\"");
            format!("libtorch: {}", first_line(&inner))
        }
        None => first_line(text),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim_end().to_string()
}

/// Applies `--threads`: libtorch's intra-op thread count, when the user gave one.
pub fn set_threads(threads: Option<usize>) {
    if let Some(n) = threads {
        tch::set_num_threads(n as i32);
    }
}

/// clap value parser for `--threads`: 1 to 4 × the cores this machine has.
pub fn parse_threads(s: &str) -> std::result::Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = 4 * cores;
    let n: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    if n == 0 || n > max {
        return Err(format!(
            "{n} threads: give 1 to {max} (this machine has {cores} cores)"
        ));
    }
    Ok(n)
}

/// A clap value parser for a whole number in `lo..=hi`.
pub fn in_range(
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    move |s: &str| {
        let n: u64 = s.parse().map_err(|_| {
            format!("'{s}' is not a whole number from {lo} to {hi}")
        })?;
        if n < lo || n > hi {
            return Err(format!("{n} is out of range: give {lo} to {hi}"));
        }
        Ok(n)
    }
}

/// A progress bar on a terminal; nothing at all when stderr is piped (the book
/// embeds the output and wants clean lines).
pub fn progress_bar(len: u64, epoch: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let template =
        "epoch {prefix:>2} {bar:30} {pos}/{len} {msg} [{elapsed_precise}]";
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_prefix(epoch.to_string());
    bar
}

pub fn device_name(device: Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(i) => format!("cuda:{i}"),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// 931213 → "931,213"
pub fn thousands(n: i64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `graph::check_supported`'s refusal, said in terms of the programs' flags.
pub fn cuda_graph_advice(why: &crate::graph::Unsupported) -> anyhow::Error {
    use crate::graph::Unsupported;
    match why {
        Unsupported::NotCuda => anyhow::anyhow!("--cuda-graph needs a CUDA device"),
        Unsupported::NeedsFusedAdam => anyhow::anyhow!(
            "--cuda-graph needs --optimizer fused: tch's Adam computes its step \
             sizes on the host, and a graph would freeze them"
        ),
        Unsupported::Unavailable(_) => anyhow::anyhow!("--cuda-graph: {why}"),
    }
}
