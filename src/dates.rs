//! Chapter 14 — a second task in real words: French dates, as a French reader
//! meets them, translated to ISO dates. "le vingt et un mars deux mille
//! vingt-quatre" → `2024-03-21`.
//!
//! Everything the model needs is new here except the model: a generator that
//! writes dates in words and knows which words became which field, a tokenizer
//! and vocabularies built from the training text, and a measure of whether
//! cross-attention looks at the words it should. The data come out as the same
//! two tensors chapter 08 lays out, so chapter 09's `fit` trains the course's
//! `Transformer` on them unchanged.
use std::collections::{BTreeSet, HashMap};
use std::ops::Range;

use anyhow::{ensure, Result};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

use crate::config::TransformerConfig;
use crate::data::{row, ReverseDataset};
use crate::generate::greedy_decode;
use crate::transformer::Transformer;
use crate::vocab::{BOS_ID, EOS_ID, PAD_ID};

// ANCHOR: date
/// A day of the Gregorian calendar between 1900-01-01 and 2099-12-31.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date {
    pub year: u32,
    pub month: u32, // 1-12
    pub day: u32,   // 1-31
}

pub const FIRST_YEAR: u32 = 1900;
pub const LAST_YEAR: u32 = 2099;

fn days_in_month(year: u32, month: u32) -> u32 {
    let leap = year.is_multiple_of(4)
        && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl Date {
    /// The date, if it exists and lies in the generator's range.
    pub fn new(year: u32, month: u32, day: u32) -> Option<Date> {
        let ok = (FIRST_YEAR..=LAST_YEAR).contains(&year)
            && (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month);
        ok.then_some(Date { year, month, day })
    }

    /// Every date of the range, in order: 73,049 of them.
    pub fn all() -> impl Iterator<Item = Date> {
        (FIRST_YEAR..=LAST_YEAR)
            .flat_map(|y| {
                (1..=12).flat_map(move |m| {
                    (1..=days_in_month(y, m)).map(move |d| Date::new(y, m, d))
                })
            })
            .flatten()
    }

    /// `YYYY-MM-DD`, what the model must write.
    pub fn iso(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// The inverse of `iso`: None for anything that is not a date in range.
    pub fn parse_iso(s: &str) -> Option<Date> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let num = |r: Range<usize>| s.get(r)?.parse::<u32>().ok();
        Date::new(num(0..4)?, num(5..7)?, num(8..10)?)
    }

    /// 0 = Monday … 6 = Sunday (Sakamoto's method, counting from a Sunday).
    pub fn weekday(&self) -> usize {
        const T: [u32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
        let y = if self.month < 3 {
            self.year - 1
        } else {
            self.year
        };
        let sunday_0 = (y + y / 4 - y / 100
            + y / 400
            + T[self.month as usize - 1]
            + self.day)
            % 7;
        (sunday_0 as usize + 6) % 7
    }
}
// ANCHOR_END: date

// ANCHOR: names
pub const MONTHS: [&str; 12] = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
];
/// The abbreviations a French typographer uses; short months stay whole.
pub const MONTHS_SHORT: [&str; 12] = [
    "janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.",
    "oct.", "nov.", "déc.",
];
pub const WEEKDAYS: [&str; 7] = [
    "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche",
];

const UNITS: [&str; 17] = [
    "zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit",
    "neuf", "dix", "onze", "douze", "treize", "quatorze", "quinze", "seize",
];
const TENS: [&str; 7] = [
    "",
    "dix",
    "vingt",
    "trente",
    "quarante",
    "cinquante",
    "soixante",
];
// ANCHOR_END: names

// ANCHOR: writer
/// 0 ≤ n ≤ 99 in words, in the traditional spelling: "et" between the tens and
/// a final "un" or "onze", hyphens everywhere else.
fn below_hundred(n: u32) -> String {
    let (tens, units) = ((n / 10) as usize, n % 10);
    // 70-79 count on from 60 and 80-99 from 80: soixante-douze = 60 + 12,
    // quatre-vingt-dix-neuf = 4 × 20 + 19. The numbers are not positional.
    let (base, rest) = match tens {
        0 | 1 if n <= 16 => return UNITS[n as usize].to_string(),
        0 | 1 => return format!("dix-{}", UNITS[units as usize]),
        7 => ("soixante", n - 60),
        8 | 9 => ("quatre-vingt", n - 80),
        _ => (TENS[tens], units),
    };
    match rest {
        0 if tens == 8 => "quatre-vingts".to_string(), // the s only when last
        0 => base.to_string(),
        1 | 11 if tens < 8 => format!("{base} et {}", below_hundred(rest)),
        _ => format!("{base}-{}", below_hundred(rest)),
    }
}

/// 0 ≤ n ≤ 9999 in words: "mille neuf cent quatre-vingt-dix-neuf".
pub fn french_number(n: u32) -> String {
    assert!(n <= 9999, "french_number writes 0 to 9999, not {n}");
    let (thousands, hundreds, tail) = (n / 1000, n / 100 % 10, n % 100);
    let mut words = Vec::new();
    match thousands {
        0 => {}
        1 => words.push("mille".to_string()), // never "un mille"
        k => words.push(format!("{} mille", below_hundred(k))),
    }
    match hundreds {
        0 => {}
        1 => words.push("cent".to_string()),
        // "deux cents" takes an s only when nothing follows it
        h if tail == 0 => words.push(format!("{} cents", UNITS[h as usize])),
        h => words.push(format!("{} cent", UNITS[h as usize])),
    }
    if tail > 0 || words.is_empty() {
        words.push(below_hundred(tail));
    }
    words.join(" ")
}

/// The day in words: the first of the month is an ordinal, "premier".
pub fn day_words(day: u32) -> String {
    if day == 1 {
        "premier".to_string()
    } else {
        french_number(day)
    }
}
// ANCHOR_END: writer

// ANCHOR: form
/// The written forms, each one a French reader meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Form {
    /// le vingt et un mars deux mille vingt-quatre
    Words,
    /// jeudi vingt et un mars deux mille vingt-quatre
    Weekday,
    /// le 21 mars deux mille vingt-quatre (the first: le 1er mars …)
    DigitDay,
    /// 21 mars 2024, with the month abbreviated where it has an abbreviation
    Short,
    /// jeudi 21 mars 2024
    WeekdayDigits,
}

impl Form {
    pub const ALL: [Form; 5] = [
        Form::Words,
        Form::Weekday,
        Form::DigitDay,
        Form::Short,
        Form::WeekdayDigits,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Form::Words => "words",
            Form::Weekday => "weekday",
            Form::DigitDay => "digit day",
            Form::Short => "short",
            Form::WeekdayDigits => "weekday digits",
        }
    }
}

/// The three fields of an ISO date, in the order the model writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    Year,
    Month,
    Day,
}

impl Field {
    pub const ALL: [Field; 3] = [Field::Year, Field::Month, Field::Day];

    pub fn name(self) -> &'static str {
        match self {
            Field::Year => "year",
            Field::Month => "month",
            Field::Day => "day",
        }
    }

    /// Where the field sits in `YYYY-MM-DD`.
    pub fn iso_chars(self) -> Range<usize> {
        match self {
            Field::Year => 0..4,
            Field::Month => 5..7,
            Field::Day => 8..10,
        }
    }
}
// ANCHOR_END: form

// ANCHOR: sample
/// One written date: its text, the text cut into pieces (the tokens, see
/// `pieces`), and for each piece the field it writes, if any ("le" and the
/// weekday write none).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub date: Date,
    pub form: Form,
    pub text: String,
    pub pieces: Vec<String>,
    pub roles: Vec<Option<Field>>,
}

impl Sample {
    /// Writes `date` in `form`. Each part of the text is cut into pieces on its
    /// own, so that every piece knows which field it came from.
    pub fn write(date: Date, form: Form) -> Sample {
        let digits = |n: u32| match n {
            1 => "1er".to_string(),
            n => n.to_string(),
        };
        let month = MONTHS[date.month as usize - 1].to_string();
        let year = french_number(date.year);
        let weekday = WEEKDAYS[date.weekday()].to_string();
        let (day, month, year, opening) = match form {
            Form::Words => (day_words(date.day), month, year, "le".to_string()),
            Form::Weekday => (day_words(date.day), month, year, weekday),
            Form::DigitDay => (digits(date.day), month, year, "le".to_string()),
            Form::Short => {
                let short = MONTHS_SHORT[date.month as usize - 1].to_string();
                (
                    digits(date.day),
                    short,
                    date.year.to_string(),
                    String::new(),
                )
            }
            Form::WeekdayDigits => {
                (digits(date.day), month, date.year.to_string(), weekday)
            }
        };
        let parts = [
            (opening, None),
            (day, Some(Field::Day)),
            (month, Some(Field::Month)),
            (year, Some(Field::Year)),
        ];
        let (mut texts, mut pieces_all, mut roles) = (vec![], vec![], vec![]);
        for (text, role) in parts.into_iter().filter(|(t, _)| !t.is_empty()) {
            for piece in pieces(&text) {
                pieces_all.push(piece);
                roles.push(role);
            }
            texts.push(text);
        }
        Sample {
            date,
            form,
            text: texts.join(" "),
            pieces: pieces_all,
            roles,
        }
    }

    /// The pieces that write `field`: one contiguous range, by construction.
    pub fn span(&self, field: Field) -> Range<usize> {
        let mut at =
            (0..self.roles.len()).filter(|&i| self.roles[i] == Some(field));
        let start = at.next().expect("every form writes every field");
        let end = at.next_back().unwrap_or(start) + 1;
        start..end
    }
}
// ANCHOR_END: sample

// ANCHOR: pieces
/// Cuts a text into the model's tokens: words at spaces, then every hyphen and
/// every digit on its own. "quatre-vingt-dix" → quatre - vingt - dix, "2024" →
/// 2 0 2 4, "1er" → 1 er. A compound number becomes the sum the French
/// actually says, and a digit keeps one meaning wherever it stands.
pub fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut letters = String::new();
        for c in word.chars() {
            if c.is_ascii_digit() || c == '-' {
                if !letters.is_empty() {
                    out.push(std::mem::take(&mut letters));
                }
                out.push(c.to_string());
            } else {
                letters.push(c);
            }
        }
        if !letters.is_empty() {
            out.push(letters);
        }
    }
    out
}

/// The inverse of `pieces` for every text the generator writes: a space
/// between pieces, except around a hyphen, between two digits, and before the
/// "er" of "1er".
pub fn join_pieces<S: AsRef<str>>(pieces: &[S]) -> String {
    let is_digit = |s: &str| s.len() == 1 && s.as_bytes()[0].is_ascii_digit();
    let mut text = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        let piece = piece.as_ref();
        if i > 0 {
            let before = pieces[i - 1].as_ref();
            let glued = before == "-"
                || piece == "-"
                || (is_digit(before) && (is_digit(piece) || piece == "er"));
            if !glued {
                text.push(' ');
            }
        }
        text.push_str(piece);
    }
    text
}
// ANCHOR_END: pieces

// ANCHOR: vocab
/// Token id of a piece the vocabulary has never seen.
pub const UNK_ID: i64 = 3;
const SPECIALS: [&str; 4] = ["<pad>", "<bos>", "<eos>", "<unk>"];

/// A vocabulary built from text: PAD, BOS and EOS keep the ids the model's
/// masks and decoder expect (0, 1, 2), UNK is 3, then every piece the text
/// contains, sorted so that the same text always gives the same ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocab {
    tokens: Vec<String>,
    ids: HashMap<String, i64>,
}

impl Vocab {
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vocab {
        let seen: BTreeSet<String> =
            texts.into_iter().flat_map(pieces).collect();
        let tokens: Vec<String> =
            SPECIALS.iter().map(|s| s.to_string()).chain(seen).collect();
        let ids = (0..).zip(&tokens).map(|(i, t)| (t.clone(), i)).collect();
        Vocab { tokens, ids }
    }

    pub fn len(&self) -> i64 {
        self.tokens.len() as i64
    }

    pub fn is_empty(&self) -> bool {
        false // the four special tokens are always there
    }

    /// The pieces of `text` as ids, UNK for an unknown piece; no BOS or EOS.
    pub fn encode(&self, text: &str) -> Vec<i64> {
        let id = |p: String| self.ids.get(&p).copied().unwrap_or(UNK_ID);
        pieces(text).into_iter().map(id).collect()
    }

    /// The text of a row of ids: BOS and PAD skipped, up to the first EOS.
    pub fn decode(&self, ids: &[i64]) -> String {
        let words: Vec<&str> = ids
            .iter()
            .take_while(|&&t| t != EOS_ID)
            .filter(|&&t| t != BOS_ID && t != PAD_ID)
            .map(|&t| self.token(t))
            .collect();
        join_pieces(&words)
    }

    pub fn token(&self, id: i64) -> &str {
        self.tokens.get(id as usize).map_or("<?>", |t| t.as_str())
    }
}
// ANCHOR_END: vocab

// ANCHOR: split
/// Which dates training never sees. A held-out year is unseen in every form
/// and on every day; a held-out day and month is unseen in every year and
/// form. The validation set (read after every epoch) and the test set (read
/// once, at the end) hold out different ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    pub test_years: BTreeSet<u32>,
    pub val_years: BTreeSet<u32>,
    pub test_days: BTreeSet<(u32, u32)>, // (month, day)
    pub val_days: BTreeSet<(u32, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Train,
    Val,
    Test,
}

impl Split {
    /// The course's split: 20 test years and 10 validation years, 24 test days
    /// (two a month) and 12 validation days (one a month), drawn from `seed`.
    /// A year is held out only if its partner a century away (1955 and 2055)
    /// is trained on: the two are written with the same words after "mille
    /// neuf cent" or "deux mille", so every word of a held-out year is seen in
    /// training, in the year's place. 1900 and 2000 are never held out: they
    /// are the only years written "cents" and "deux mille" with nothing after.
    pub fn new(seed: u64) -> Split {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut years: Vec<u32> = (FIRST_YEAR + 1..=LAST_YEAR)
            .filter(|&y| y != 2000)
            .collect();
        years.shuffle(&mut rng);
        let mut chosen = Vec::new();
        for y in years {
            let partner = if y < 2000 { y + 100 } else { y - 100 };
            if !chosen.contains(&partner) && chosen.len() < 30 {
                chosen.push(y);
            }
        }
        // Days 2-28 exist in every month; the first keeps "premier" in training.
        let mut test_days = BTreeSet::new();
        let mut val_days = BTreeSet::new();
        for month in 1..=12 {
            let mut days: Vec<u32> = (2..=28).collect();
            days.shuffle(&mut rng);
            test_days.extend([(month, days[0]), (month, days[1])]);
            val_days.insert((month, days[2]));
        }
        Split {
            test_years: chosen[..20].iter().copied().collect(),
            val_years: chosen[20..].iter().copied().collect(),
            test_days,
            val_days,
        }
    }

    /// The test set wins a date that both would hold out.
    pub fn part(&self, d: &Date) -> Part {
        let md = (d.month, d.day);
        if self.test_years.contains(&d.year) || self.test_days.contains(&md) {
            Part::Test
        } else if self.val_years.contains(&d.year)
            || self.val_days.contains(&md)
        {
            Part::Val
        } else {
            Part::Train
        }
    }

    /// Every date of one part, in order.
    pub fn dates(&self, part: Part) -> Vec<Date> {
        Date::all().filter(|d| self.part(d) == part).collect()
    }
}

/// The seed of the course's split.
pub const SPLIT_SEED: u64 = 14;

/// `n` samples of `dates`, each date and each form drawn uniformly from `seed`.
pub fn draw(dates: &[Date], n: usize, seed: u64) -> Vec<Sample> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let date = *dates.choose(&mut rng).expect("some dates");
            let form = *Form::ALL.choose(&mut rng).expect("five forms");
            Sample::write(date, form)
        })
        .collect()
}
// ANCHOR_END: split

// ANCHOR: dataset
/// Rows are this long: the longest written dates have 15 pieces ("mercredi
/// vingt-sept septembre mille neuf cent quatre-vingt-dix-sept"), plus EOS.
pub const SRC_LEN: usize = 16;
/// BOS, the ten characters of YYYY-MM-DD, EOS.
pub const TGT_LEN: usize = 12;

/// The samples as chapter 08's two tensors: src `pieces EOS PAD…` [N, SRC_LEN],
/// tgt `BOS Y Y Y Y - M M - D D EOS` [N, TGT_LEN].
pub fn dataset(
    samples: &[Sample],
    src: &Vocab,
    tgt: &Vocab,
) -> Result<ReverseDataset> {
    let mut src_ids = vec![PAD_ID; samples.len() * SRC_LEN];
    let mut tgt_ids = vec![PAD_ID; samples.len() * TGT_LEN];
    for (i, s) in samples.iter().enumerate() {
        let x = src.encode(&s.text);
        ensure!(x.len() < SRC_LEN, "{:?} has {} pieces", s.text, x.len());
        let row = &mut src_ids[i * SRC_LEN..][..SRC_LEN];
        row[..x.len()].copy_from_slice(&x);
        row[x.len()] = EOS_ID;
        let y = tgt.encode(&s.date.iso());
        let row = &mut tgt_ids[i * TGT_LEN..][..TGT_LEN];
        row[0] = BOS_ID;
        row[1..=y.len()].copy_from_slice(&y);
        row[y.len() + 1] = EOS_ID;
    }
    let n = samples.len() as i64;
    Ok(ReverseDataset {
        src: Tensor::from_slice(&src_ids).view([n, SRC_LEN as i64]),
        tgt: Tensor::from_slice(&tgt_ids).view([n, TGT_LEN as i64]),
    })
}
// ANCHOR_END: dataset

// ANCHOR: task
/// Chapter 14's task in one place: the split, the three draws (training seed
/// 0, validation 1, test 2, whatever the model's seed), the vocabularies built
/// from the training draw, and the model's config for them.
pub struct DateTask {
    pub split: Split,
    pub train: Vec<Sample>,
    pub val: Vec<Sample>,
    pub test: Vec<Sample>,
    pub src_vocab: Vocab,
    pub tgt_vocab: Vocab,
}

impl DateTask {
    pub fn new(n_train: usize, n_test: usize) -> DateTask {
        let split = Split::new(SPLIT_SEED);
        let train = draw(&split.dates(Part::Train), n_train, 0);
        let val = draw(&split.dates(Part::Val), 1_000, 1);
        let test = draw(&split.dates(Part::Test), n_test, 2);
        let src_vocab =
            Vocab::from_texts(train.iter().map(|s| s.text.as_str()));
        let isos: Vec<String> = train.iter().map(|s| s.date.iso()).collect();
        let tgt_vocab = Vocab::from_texts(isos.iter().map(String::as_str));
        DateTask {
            split,
            train,
            val,
            test,
            src_vocab,
            tgt_vocab,
        }
    }

    /// The course's model for these vocabularies: only the two vocabulary
    /// sizes and the position table's length differ from `reverse_task()`.
    pub fn config(&self) -> TransformerConfig {
        TransformerConfig {
            src_vocab: self.src_vocab.len(),
            tgt_vocab: self.tgt_vocab.len(),
            max_len: SRC_LEN as i64,
            ..TransformerConfig::reverse_task()
        }
    }

    /// `samples` as tensors, with this task's vocabularies.
    pub fn tensors(&self, samples: &[Sample]) -> Result<ReverseDataset> {
        dataset(samples, &self.src_vocab, &self.tgt_vocab)
    }
}
// ANCHOR_END: task

/// What the model writes for every row of `data.src`, greedily, as text.
pub fn translate(
    model: &Transformer,
    data: &ReverseDataset,
    tgt: &Vocab,
    batch: i64,
) -> Vec<String> {
    let n = data.src.size()[0];
    let mut out = Vec::with_capacity(n as usize);
    for start in (0..n).step_by(batch as usize) {
        let len = batch.min(n - start);
        let src = data.src.narrow(0, start, len).to_device(model.device());
        let pred = greedy_decode(model, &src, TGT_LEN).to_device(Device::Cpu);
        out.extend((0..len).map(|i| tgt.decode(&row(&pred, i))));
    }
    out
}

/// The fields a prediction gets wrong (all three if it is no ISO date at all).
pub fn wrong_fields(truth: &Date, predicted: &str) -> Vec<Field> {
    let Some(p) = Date::parse_iso(predicted) else {
        // Not a date: compare field by field where the text allows it.
        return Field::ALL
            .into_iter()
            .filter(|f| {
                predicted.get(f.iso_chars()) != truth.iso().get(f.iso_chars())
            })
            .collect();
    };
    let pairs = [
        (Field::Year, p.year, truth.year),
        (Field::Month, p.month, truth.month),
        (Field::Day, p.day, truth.day),
    ];
    pairs
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(f, _, _)| f)
        .collect()
}

// ANCHOR: field_attention
/// How much of each head's cross-attention, while the decoder writes a field,
/// falls on the words that field was written with. For every layer and head:
/// `[year, month, day]`, each the mean over samples and over the field's output
/// characters of the attention mass on the field's input span (1 = all of
/// it). The decoder reads the true ISO date (teacher forcing), so the question
/// is where it looks, not whether it is right.
pub fn field_attention(
    model: &Transformer,
    samples: &[Sample],
    data: &ReverseDataset,
) -> Vec<Vec<[f64; 3]>> {
    let device = model.device();
    let n = samples.len() as i64;
    // spans[b, f, s] = 1 where source piece s of sample b writes field f
    let mut spans = vec![0f32; samples.len() * 3 * SRC_LEN];
    for (b, s) in samples.iter().enumerate() {
        for (f, field) in Field::ALL.into_iter().enumerate() {
            for col in s.span(field) {
                spans[(b * 3 + f) * SRC_LEN + col] = 1.0;
            }
        }
    }
    let spans = Tensor::from_slice(&spans)
        .view([n, 3, 1, 1, SRC_LEN as i64])
        .to_device(device);
    let tgt_in = data.tgt.narrow(1, 0, TGT_LEN as i64 - 1).to_device(device);
    let src = data.src.to_device(device);
    let (_, dec_w) = crate::viz::every_weight(model, &src, &tgt_in);
    dec_w
        .iter()
        .map(|w| {
            // [N, h, T, S]; query row k writes ISO character k (row 0 reads BOS)
            let w = w.cross_attn.to_kind(Kind::Float);
            let shares = Field::ALL.map(|field| {
                let rows = field.iso_chars();
                let f = field as i64;
                let w = w.narrow(2, rows.start as i64, rows.len() as i64);
                let on_span = w * spans.select(1, f); // [N, h, |rows|, S]
                on_span
                    .sum_dim_intlist([-1].as_slice(), false, Kind::Float)
                    .mean_dim([0, 2].as_slice(), false, Kind::Float) // [h]
            });
            let heads = w.size()[1];
            (0..heads)
                .map(|h| shares.each_ref().map(|t| t.double_value(&[h])))
                .collect()
        })
        .collect()
}
// ANCHOR_END: field_attention
