//! Chapter 14: the date generator, its tokenizer and split, the data layout, the
//! attention measure, and the chapter's program on a tiny run.
mod common;

use std::collections::HashSet;
use std::process::Command;

use rstest::rstest;
use tch::Tensor;
use transformer_course::data::row;
use transformer_course::dates::{
    dataset, draw, field_attention, french_number, join_pieces, pieces,
    wrong_fields, Date, Field, Form, Part, Sample, Split, Vocab, MONTHS,
    MONTHS_SHORT, SPLIT_SEED, SRC_LEN, TGT_LEN, UNK_ID, WEEKDAYS,
};
use transformer_course::viz::every_weight;

/// The value of a French number written in words, read independently of the
/// writer: units and tens add up, "quatre" before "vingt" multiplies it (4 ×
/// 20), "cent" multiplies what precedes it by 100 and "mille" by 1000.
fn read_number(words: &[String]) -> Option<u32> {
    const TENS: [(&str, u32); 6] = [
        ("dix", 10),
        ("vingt", 20),
        ("trente", 30),
        ("quarante", 40),
        ("cinquante", 50),
        ("soixante", 60),
    ];
    const UNITS: [&str; 16] = [
        "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf",
        "dix", "onze", "douze", "treize", "quatorze", "quinze", "seize",
    ];
    let (mut total, mut current, mut last) = (0, 0, 0);
    for w in words.iter().filter(|w| *w != "-" && *w != "et") {
        let w = w.as_str();
        if w == "premier" {
            return (words.len() == 1).then_some(1);
        } else if (w == "vingt" || w == "vingts") && last == 4 {
            current += 80 - 4; // quatre-vingt: 4 × 20, the 4 already counted
            last = 80;
        } else if let Some(i) = UNITS.iter().position(|u| *u == w) {
            current += i as u32 + 1;
            last = i as u32 + 1;
        } else if let Some(&(_, v)) = TENS.iter().find(|(t, _)| *t == w) {
            current += v;
            last = v;
        } else if w == "cent" || w == "cents" {
            current = current.max(1) * 100;
            last = 100;
        } else if w == "mille" {
            total += current.max(1) * 1000;
            current = 0;
            last = 1000;
        } else if w.chars().all(|c| c.is_ascii_digit()) {
            current = current * 10 + w.parse::<u32>().ok()?;
            last = 0;
        } else {
            return None;
        }
    }
    Some(total + current)
}

/// Reads a written date back without looking at the roles the writer gave its
/// pieces: an optional "le" or weekday, the day up to the month's name, the
/// year after it. Returns the date and the role each piece had in the reading.
fn read_date(text: &str) -> Option<(Date, Vec<Option<Field>>)> {
    let p = pieces(text);
    let month_at = p.iter().position(|w| {
        MONTHS.contains(&w.as_str()) || MONTHS_SHORT.contains(&w.as_str())
    })?;
    let name = p[month_at].as_str();
    let month = MONTHS
        .iter()
        .position(|m| *m == name)
        .or_else(|| MONTHS_SHORT.iter().position(|m| *m == name))?
        as u32
        + 1;
    let opening =
        usize::from(p[0] == "le" || WEEKDAYS.contains(&p[0].as_str()));
    let mut day_words: Vec<String> = p[opening..month_at].to_vec();
    if day_words.last().map(String::as_str) == Some("er") {
        day_words.pop(); // 1er
    }
    let day = read_number(&day_words)?;
    let year = read_number(&p[month_at + 1..])?;
    let date = Date::new(year, month, day)?;
    if opening == 1 && p[0] != "le" && WEEKDAYS[date.weekday()] != p[0] {
        return None; // a weekday that does not match the date
    }
    let roles = (0..p.len())
        .map(|i| match i {
            i if i < opening => None,
            i if i < month_at => Some(Field::Day),
            i if i == month_at => Some(Field::Month),
            _ => Some(Field::Year),
        })
        .collect();
    Some((date, roles))
}

#[test]
fn every_date_in_every_form_reads_back_and_its_spans_cover_exactly_its_words() {
    let mut longest = 0;
    let mut n = 0;
    for date in Date::all() {
        for form in Form::ALL {
            let s = Sample::write(date, form);
            assert_eq!(s.pieces, pieces(&s.text), "{:?}", s.text);
            assert_eq!(join_pieces(&s.pieces), s.text, "round trip");
            let (read, roles) = read_date(&s.text)
                .unwrap_or_else(|| panic!("cannot read back {:?}", s.text));
            assert_eq!(read, date, "{:?} reads as another date", s.text);
            assert_eq!(roles, s.roles, "the roles of {:?}", s.text);
            for f in Field::ALL {
                let span = s.span(f);
                assert!(span.clone().all(|i| s.roles[i] == Some(f)));
                let count = s.roles.iter().filter(|r| **r == Some(f)).count();
                assert_eq!(span.len(), count, "{f:?} not contiguous");
            }
            longest = longest.max(s.pieces.len());
            n += 1;
        }
    }
    assert_eq!(n, 73_049 * 5, "every day from 1900 to 2099, five forms");
    assert_eq!(longest + 1, SRC_LEN, "SRC_LEN is the longest date plus EOS");
}

#[rstest]
#[case(1, "un")]
#[case(17, "dix-sept")]
#[case(21, "vingt et un")]
#[case(60, "soixante")]
#[case(71, "soixante et onze")]
#[case(77, "soixante-dix-sept")]
#[case(80, "quatre-vingts")]
#[case(81, "quatre-vingt-un")]
#[case(91, "quatre-vingt-onze")]
#[case(99, "quatre-vingt-dix-neuf")]
#[case(200, "deux cents")]
#[case(201, "deux cent un")]
#[case(1900, "mille neuf cents")]
#[case(1980, "mille neuf cent quatre-vingts")]
#[case(1999, "mille neuf cent quatre-vingt-dix-neuf")]
#[case(2000, "deux mille")]
#[case(2024, "deux mille vingt-quatre")]
fn french_numbers_follow_the_grammar(#[case] n: u32, #[case] words: &str) {
    assert_eq!(french_number(n), words);
}

#[test]
fn the_forms_of_one_date() {
    let d = Date::new(2024, 3, 21).unwrap();
    let texts: Vec<String> = Form::ALL
        .iter()
        .map(|&f| Sample::write(d, f).text)
        .collect();
    assert_eq!(
        texts,
        [
            "le vingt et un mars deux mille vingt-quatre",
            "jeudi vingt et un mars deux mille vingt-quatre",
            "le 21 mars deux mille vingt-quatre",
            "21 mars 2024",
            "jeudi 21 mars 2024",
        ]
    );
    let first = Date::new(1999, 1, 1).unwrap();
    assert_eq!(
        Sample::write(first, Form::Words).text,
        "le premier janvier mille neuf cent quatre-vingt-dix-neuf"
    );
    assert_eq!(Sample::write(first, Form::Short).text, "1er janv. 1999");
}

#[test]
fn weekdays_and_the_calendar() {
    assert_eq!(Date::new(1900, 1, 1).unwrap().weekday(), 0, "a Monday");
    assert_eq!(Date::new(2000, 2, 29).unwrap().weekday(), 1, "a Tuesday");
    assert_eq!(Date::new(1900, 2, 29), None, "1900 was no leap year");
    let all: Vec<Date> = Date::all().collect();
    for pair in all.windows(2) {
        assert!(pair[0] < pair[1]);
        assert_eq!((pair[0].weekday() + 1) % 7, pair[1].weekday());
    }
    for d in &all {
        assert_eq!(Date::parse_iso(&d.iso()), Some(*d));
    }
    assert_eq!(Date::parse_iso("2024-02-30"), None);
    assert_eq!(Date::parse_iso("2024-3-21"), None);
}

#[test]
fn the_split_is_disjoint_and_every_held_out_word_is_trained_in_its_role() {
    let split = Split::new(SPLIT_SEED);
    assert_eq!((split.test_years.len(), split.val_years.len()), (20, 10));
    assert_eq!((split.test_days.len(), split.val_days.len()), (24, 12));
    assert!(split.test_years.is_disjoint(&split.val_years));
    assert!(split.test_days.is_disjoint(&split.val_days));
    let [train, val, test] =
        [Part::Train, Part::Val, Part::Test].map(|p| split.dates(p));
    assert_eq!(train.len() + val.len() + test.len(), 73_049);
    let train_set: HashSet<Date> = train.iter().copied().collect();
    for d in val.iter().chain(&test) {
        assert!(!train_set.contains(d), "{d:?} is held out and trained on");
    }
    for y in split.test_years.iter().chain(&split.val_years) {
        let partner = if *y < 2000 { y + 100 } else { y - 100 };
        assert!(train.iter().any(|d| d.year == partner), "{y}'s partner");
    }
    // The chapter's training draw holds every (piece, role) of every held-out
    // date, in every form.
    let drawn = draw(&train, 64_000, 0);
    let seen: HashSet<(String, Option<Field>)> = drawn
        .iter()
        .flat_map(|s| s.pieces.iter().cloned().zip(s.roles.iter().copied()))
        .collect();
    for d in val.iter().chain(&test) {
        for form in Form::ALL {
            let s = Sample::write(*d, form);
            for pair in s.pieces.iter().cloned().zip(s.roles.iter().copied()) {
                assert!(seen.contains(&pair), "{pair:?} of {:?}", s.text);
            }
        }
    }
    assert!(drawn.iter().all(|s| split.part(&s.date) == Part::Train));
}

#[test]
fn the_vocabulary_round_trips_and_marks_the_unknown() {
    let split = Split::new(SPLIT_SEED);
    let train = draw(&split.dates(Part::Train), 5_000, 0);
    let vocab = Vocab::from_texts(train.iter().map(|s| s.text.as_str()));
    assert_eq!(vocab.token(0), "<pad>");
    assert_eq!(vocab.token(UNK_ID), "<unk>");
    for s in draw(&split.dates(Part::Test), 500, 2) {
        let ids = vocab.encode(&s.text);
        assert!(!ids.contains(&UNK_ID), "{:?}", s.text);
        assert_eq!(vocab.decode(&ids), s.text);
    }
    let ids = vocab.encode("le trente-deux brumaire");
    assert_eq!(ids.iter().filter(|&&i| i == UNK_ID).count(), 1, "brumaire");
    assert_eq!(ids.len(), 5, "le trente - deux brumaire");
}

#[test]
fn the_dataset_lays_out_rows_as_chapter_08_does() {
    let split = Split::new(SPLIT_SEED);
    let samples = draw(&split.dates(Part::Test), 50, 2);
    let texts: Vec<String> = samples.iter().map(|s| s.text.clone()).collect();
    let src = Vocab::from_texts(texts.iter().map(String::as_str));
    let isos: Vec<String> = samples.iter().map(|s| s.date.iso()).collect();
    let tgt = Vocab::from_texts(isos.iter().map(String::as_str));
    assert_eq!(tgt.len(), 4 + 11, "ten digits and the hyphen");
    let data = dataset(&samples, &src, &tgt).unwrap();
    assert_eq!(data.src.size(), [50, SRC_LEN as i64]);
    assert_eq!(data.tgt.size(), [50, TGT_LEN as i64]);
    for (i, s) in samples.iter().enumerate() {
        let (x, y) = (row(&data.src, i as i64), row(&data.tgt, i as i64));
        assert_eq!(x[s.pieces.len()], 2, "EOS right after the pieces");
        assert_eq!(src.decode(&x), s.text);
        assert_eq!((y[0], y[TGT_LEN - 1]), (1, 2), "BOS … EOS");
        assert_eq!(tgt.decode(&y), s.date.iso());
    }
}

#[test]
fn wrong_fields_names_each_field_that_differs() {
    let d = Date::new(2024, 3, 21).unwrap();
    assert!(wrong_fields(&d, "2024-03-21").is_empty());
    assert_eq!(wrong_fields(&d, "2042-03-21"), [Field::Year]);
    assert_eq!(wrong_fields(&d, "2024-03-12"), [Field::Day]);
    assert_eq!(wrong_fields(&d, "2024-02-31"), [Field::Month, Field::Day]);
    assert_eq!(wrong_fields(&d, ""), Field::ALL);
}

#[test]
fn field_attention_is_the_mass_on_each_fields_span() {
    let split = Split::new(SPLIT_SEED);
    let samples = draw(&split.dates(Part::Test), 6, 2);
    let texts: Vec<String> = samples.iter().map(|s| s.text.clone()).collect();
    let src = Vocab::from_texts(texts.iter().map(String::as_str));
    let tgt = Vocab::from_texts(["0123456789-"]);
    let data = dataset(&samples, &src, &tgt).unwrap();
    let cfg = transformer_course::config::TransformerConfig {
        src_vocab: src.len(),
        tgt_vocab: tgt.len(),
        max_len: SRC_LEN as i64,
        ..common::tiny_config()
    };
    let (_vs, model) = common::model_with(cfg, 3);
    let shares = field_attention(&model, &samples, &data);
    assert_eq!((shares.len(), shares[0].len()), (2, 4), "layers × heads");
    // By hand: layer 1, head 2, the month (ISO characters 5 and 6).
    let tgt_in = data.tgt.narrow(1, 0, TGT_LEN as i64 - 1);
    let (_, w) = every_weight(&model, &data.src, &tgt_in);
    let w = &w[1].cross_attn;
    let mut total = 0.0;
    for (b, s) in samples.iter().enumerate() {
        for k in Field::Month.iso_chars() {
            let r: Tensor = w.get(b as i64).get(2).get(k as i64);
            total += s
                .span(Field::Month)
                .map(|c| r.double_value(&[c as i64]))
                .sum::<f64>();
        }
    }
    let by_hand = total / (samples.len() * 2) as f64;
    assert!(
        (shares[1][2][1] - by_hand).abs() < 1e-5,
        "{} vs {by_hand}",
        shares[1][2][1]
    );
    for s in shares.iter().flatten().flatten() {
        assert!((0.0..=1.0).contains(s));
    }
}

#[test]
fn the_chapter_runs_end_to_end_on_a_tiny_budget() {
    let dir =
        std::env::temp_dir().join(format!("dates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_14_dates"))
        .args([
            "--epochs",
            "1",
            "--train-samples",
            "64",
            "--test-samples",
            "20",
        ])
        .args(["--threads", "1", "--device", "cpu", "--out-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "held-out exact match:",
        "by form",
        "layer head   year",
        "evenly spread",
    ] {
        assert!(stdout.contains(line), "no {line:?} in\n{stdout}");
    }
    let svg = std::fs::read_to_string(dir.join("14_dates_cross_attention.svg"))
        .unwrap();
    assert_eq!(svg.matches("layer ").count(), 8, "two layers × four heads");
    std::fs::remove_dir_all(&dir).unwrap();
}
