//! The training log on disk: `09_train_reverse` writes one `.history.tsv` beside
//! each checkpoint (the epoch table, then the loss of every step), and `--compare`
//! reads other runs' files back for the plots.
use std::path::{Path, PathBuf};

use anyhow::{anyhow, ensure, Context, Result};

use transformer_course::train::History;

/// The history file that goes with a checkpoint: `X.safetensors` →
/// `X.history.tsv`.
pub fn history_path(checkpoint: &Path) -> PathBuf {
    checkpoint.with_extension("history.tsv")
}

/// A run's history as tab-separated values: a `# label` line, the epoch table
/// (with `seconds[i]`, the wall time at the end of epoch i + 1, as the program
/// measured it), a blank line, and the step table.
pub fn history_tsv(label: &str, history: &History, seconds: &[f64]) -> String {
    let mut s = format!(
        "# {label}\nepoch\tloss\ttoken_acc\tval_exact_match\tlr\tseconds\n"
    );
    for (i, r) in history.epochs.iter().enumerate() {
        let secs = seconds.get(i).copied().unwrap_or(f64::NAN);
        s += &format!(
            "{}\t{:.6}\t{:.6}\t{:.6}\t{:.6e}\t{secs:.1}\n",
            r.epoch, r.loss, r.token_acc, r.val_exact_match, r.lr
        );
    }
    s += "\nstep\tloss\n";
    for (i, loss) in history.step_losses.iter().enumerate() {
        s += &format!("{}\t{loss:.6}\n", i + 1);
    }
    s
}

/// What the plots need of another run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunHistory {
    pub label: String,
    /// Validation exact match after each epoch.
    pub exact_match: Vec<f64>,
    /// Training loss of every step (empty in files written before it was kept).
    pub step_losses: Vec<f64>,
}

/// The largest history `read_history` reads: a line per epoch and a number per
/// step make a few MiB for the longest run the course has any use for.
pub const MAX_HISTORY: u64 = 64 << 20;

/// Reads back a file written from `history_tsv`.
pub fn read_history(path: &Path) -> Result<RunHistory> {
    use std::io::Read;
    let shown = path.display();
    let opened = crate::output::open_input(path, MAX_HISTORY, "a history");
    let (file, size) = opened.map_err(|e| {
        if crate::output::is_not_found(&e) {
            anyhow!("cannot read {shown}: train that run first, or check it")
        } else {
            e.context(format!("cannot read {shown} as a history"))
        }
    })?;
    let mut bytes = Vec::with_capacity(size as usize);
    // `take`: a file that grows while it is read stays within the limit too.
    file.take(MAX_HISTORY + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {shown}"))?;
    ensure!(
        bytes.len() as u64 <= MAX_HISTORY,
        "{shown} grew past the {} a history can be while it was read",
        crate::output::bytes_text(MAX_HISTORY)
    );
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow!("{shown} is not a history file (it is not text)")
    })?;
    parse_history(&text)
        .with_context(|| format!("{shown} is not a history file"))
}

fn parse_history(text: &str) -> Result<RunHistory> {
    let mut lines = text.lines();
    let label = lines
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .ok_or_else(|| anyhow!("no '# label' line"))?;
    // The label goes into figures (SVG text), where a control character
    // makes the file invalid XML; this course never writes one.
    ensure!(
        !label.chars().any(char::is_control),
        "its label holds a control character"
    );
    ensure!(
        lines.next().is_some_and(|l| l.starts_with("epoch\t")),
        "no epoch table"
    );
    let column = |l: &str, i: usize| -> Result<f64> {
        let v = l.split('\t').nth(i).and_then(|v| v.parse::<f64>().ok());
        v.filter(|v| v.is_finite())
            .ok_or_else(|| anyhow!("bad line '{l}'"))
    };
    let mut exact_match = Vec::new();
    for l in lines.by_ref().take_while(|l| !l.is_empty()) {
        exact_match.push(column(l, 3)?);
    }
    ensure!(!exact_match.is_empty(), "it holds no epochs");
    let mut step_losses = Vec::new();
    if lines.next().is_some_and(|l| l.starts_with("step\t")) {
        for l in lines {
            step_losses.push(column(l, 1)?);
        }
    }
    Ok(RunHistory {
        label: label.to_string(),
        exact_match,
        step_losses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use transformer_course::train::EpochReport;

    #[test]
    fn a_history_reads_back_what_was_written() {
        let report = |epoch, em| EpochReport {
            epoch,
            loss: 0.5,
            token_acc: 0.9,
            val_exact_match: em,
            lr: 1e-3,
        };
        let h = History {
            epochs: vec![report(1, 0.25), report(2, 0.75)],
            step_losses: vec![2.5, 1.25, 0.5],
        };
        let back =
            parse_history(&history_tsv("paper", &h, &[1.0, 2.0])).unwrap();
        assert_eq!(back.label, "paper");
        assert_eq!(back.exact_match, [0.25, 0.75]);
        assert_eq!(back.step_losses, [2.5, 1.25, 0.5]);
    }

    #[test]
    fn broken_histories_are_refused() {
        for text in [
            "",
            "paper\n",
            "# a\nepoch\tloss\n",
            "# a\nepoch\tx\n1\t2\t3\tNaN\n",
        ] {
            assert!(parse_history(text).is_err(), "{text:?} was accepted");
        }
        // A label with a control character would make a figure's SVG
        // invalid; the same file with a plain label reads.
        let body =
            "epoch\tloss\ttoken_acc\tval_exact_match\n1\t0.5\t0.9\t0.5\n";
        let err = parse_history(&format!("# a\u{1b}]0;x\u{7}\n{body}"));
        assert!(format!("{:#}", err.unwrap_err()).contains("control character"));
        assert!(parse_history(&format!("# a\n{body}")).is_ok());
        // A file of the older format, without the step table, still reads.
        let old =
            "# a\nepoch\tloss\ttoken_acc\tval_exact_match\n1\t0.5\t0.9\t0.5\n";
        assert_eq!(parse_history(old).unwrap().step_losses, Vec::<f64>::new());
    }
}
