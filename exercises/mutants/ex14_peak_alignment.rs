// Wrong solutions of ex14_peak_alignment.

// MUTANT: mass — sums the weight on the span (chapter 14's measure), not where rows peak
    let heads = cross.size()[1];
    (0..heads)
        .map(|h| {
            Field::ALL.map(|field| {
                let (rows, mut total) = (field.iso_chars(), 0.0);
                for (b, sample) in samples.iter().enumerate() {
                    for k in rows.clone() {
                        for c in sample.span(field) {
                            total += cross.double_value(&[b as i64, h, k as i64, c as i64]);
                        }
                    }
                }
                total / (samples.len() * rows.len()) as f64
            })
        })
        .collect()

// MUTANT: next_row — row k + 1 taken for ISO character k, as if row 0 wrote nothing
    let peaks = cross.argmax(-1, false).to_device(Device::Cpu);
    let heads = cross.size()[1];
    (0..heads)
        .map(|h| {
            Field::ALL.map(|field| {
                let (rows, mut hits) = (field.iso_chars(), 0);
                for (b, sample) in samples.iter().enumerate() {
                    let span = sample.span(field);
                    for k in rows.clone() {
                        let at = [b as i64, h, k as i64 + 1];
                        hits += usize::from(span.contains(&(peaks.int64_value(&at) as usize)));
                    }
                }
                hits as f64 / (samples.len() * rows.len()) as f64
            })
        })
        .collect()

// MUTANT: per_sample — divides by the samples only, not by the rows of the field
    let peaks = cross.argmax(-1, false).to_device(Device::Cpu);
    let heads = cross.size()[1];
    (0..heads)
        .map(|h| {
            Field::ALL.map(|field| {
                let (rows, mut hits) = (field.iso_chars(), 0);
                for (b, sample) in samples.iter().enumerate() {
                    let span = sample.span(field);
                    for k in rows.clone() {
                        let at = [b as i64, h, k as i64];
                        hits += usize::from(span.contains(&(peaks.int64_value(&at) as usize)));
                    }
                }
                (hits as f64 / samples.len() as f64).min(1.0)
            })
        })
        .collect()

// MUTANT: any_field — counts a peak on any field's words as right
    let peaks = cross.argmax(-1, false).to_device(Device::Cpu);
    let heads = cross.size()[1];
    (0..heads)
        .map(|h| {
            Field::ALL.map(|field| {
                let (rows, mut hits) = (field.iso_chars(), 0);
                for (b, sample) in samples.iter().enumerate() {
                    for k in rows.clone() {
                        let p = peaks.int64_value(&[b as i64, h, k as i64]) as usize;
                        hits += usize::from(sample.roles.get(p).is_some_and(|r| r.is_some()));
                    }
                }
                hits as f64 / (samples.len() * rows.len()) as f64
            })
        })
        .collect()
