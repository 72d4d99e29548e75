//! What a benchmark configuration will cost, known before it runs: chapter 12
//! refuses sizes the machine cannot hold (on the CPU, running out of memory is
//! not an error libtorch can report: the kernel kills the process, or the
//! machine swaps for minutes) and warns before the slow ones.
use std::fs;

/// Bytes of memory the kernel says can be given to a new program without
/// swapping (MemAvailable of /proc/meminfo); None where there is no such file.
pub fn mem_available() -> Option<u64> {
    meminfo_field(&fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable")
}

/// Bytes this process can still allocate: the memory available (see
/// `mem_available`) or, under `ulimit -v`, what the limit leaves above the
/// address space already in use, whichever is less; None where neither is known.
pub fn memory_headroom() -> Option<u64> {
    match (mem_available(), address_space_left()) {
        (Some(a), Some(l)) => Some(a.min(l)),
        (a, l) => a.or(l),
    }
}

/// RLIMIT_AS (`ulimit -v`) minus this process's VmSize; None without a limit.
pub fn address_space_left() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into our own variable.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0
        || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let used = meminfo_field(&status, "VmSize")?;
    Some(r.rlim_cur.saturating_sub(used))
}

/// A field of /proc/meminfo ("MemAvailable:   12345 kB"), in bytes.
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(name))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The cost of one call of hand-written multi-head attention in fp32 (the more
/// expensive of chapter 12's two paths) on `[b, l, d]` with `h` heads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttentionCost {
    /// Peak bytes, an upper estimate: the four d × d weights, a handful of
    /// [b, l, d] activations, and the [b, h, l, l] score matrix two and a half
    /// times (scores, softmax, and the temporaries between them). On chapter
    /// 12's CPU runs it is 20–30 % above the measured peak.
    pub bytes: u64,
    /// Floating-point operations: the four projections and the two products
    /// with the score matrix.
    pub flops: f64,
}

pub fn attention_cost(b: i64, l: i64, d: i64, h: i64) -> AttentionCost {
    let (b, l, d, h) = (b as u64, l as u64, d as u64, h as u64);
    let weights = 4 * d * d * 4;
    let activations = 8 * b * l * d * 4;
    let scores = b * h * l * l * 4;
    let flops =
        4.0 * 2.0 * (b * l * d * d) as f64 + 2.0 * 2.0 * (b * l * l * d) as f64;
    AttentionCost {
        bytes: weights + activations + scores / 2 * 5,
        flops,
    }
}

/// Whether a configuration of `bytes` fits in `available` with a margin for
/// everything else the program and the machine hold.
pub fn fits(bytes: u64, available: u64) -> bool {
    bytes <= available / 10 * 9
}

/// The longest length of a doubling sweep from 128 up to `max` whose
/// configuration fits in `available` bytes (128 at least: the sweep's start).
pub fn longest_sweep(b: i64, d: i64, h: i64, max: i64, available: u64) -> i64 {
    let mut l = 128;
    while l * 2 <= max && fits(attention_cost(b, l * 2, d, h).bytes, available)
    {
        l *= 2;
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(meminfo_field(text, "MemAvailable"), Some(1_024_000));
        assert_eq!(meminfo_field(text, "MemFree"), None);
    }

    #[test]
    fn the_estimate_is_above_chapter_12s_measured_peaks() {
        // CPU, B=8, d=512, h=8 (book/src/outputs/12_sdpa_bench.txt):
        // L=1024 peaked at 593 MiB, L=2048 at 2212 MiB.
        for (l, measured_mib) in [(1024, 593), (2048, 2212)] {
            let est = attention_cost(8, l, 512, 8).bytes >> 20;
            assert!(
                est > measured_mib && est < 2 * measured_mib,
                "L={l}: estimate {est} MiB, measured {measured_mib} MiB"
            );
        }
    }

    #[test]
    fn the_sweep_stops_below_the_memory_available() {
        let gib = 1u64 << 30;
        // B=8, d=512, h=8 needs about 2.8 GiB at L=2048, 10.5 GiB at 4096.
        assert_eq!(longest_sweep(8, 512, 8, 65536, 8 * gib), 2048);
        assert_eq!(longest_sweep(8, 512, 8, 65536, 16 * gib), 4096);
        assert_eq!(longest_sweep(8, 512, 8, 1024, 16 * gib), 1024);
        assert_eq!(longest_sweep(8, 512, 8, 65536, 0), 128);
    }
}
