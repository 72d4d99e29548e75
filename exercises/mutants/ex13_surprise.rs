// Wrong solutions of ex13_surprise.

// MUTANT: order_given — ranks by the position in `measured`, not by the rate
    for name in predicted {
        if !measured.iter().any(|m| m.0 == *name) {
            return Err(format!("'{name}' was not measured"));
        }
        if predicted.iter().filter(|p| *p == name).count() > 1 {
            return Err(format!("'{name}' is predicted twice"));
        }
    }
    if let Some(m) = measured.iter().find(|m| !predicted.contains(&m.0)) {
        return Err(format!("'{}' has no predicted rank", m.0));
    }
    let mut best: Option<(String, i64)> = None;
    for (rank, &(name, _)) in measured.iter().enumerate() {
        let guess = predicted.iter().position(|p| *p == name).unwrap() as i64;
        let shift = rank as i64 - guess;
        if best.as_ref().is_none_or(|b| shift.abs() > b.1.abs()) {
            best = Some((name.to_string(), shift));
        }
    }
    best.ok_or_else(|| "nothing was measured".to_string())

// MUTANT: ties_worse — a tie takes the worse rank (counts rates at least as high)
    for name in predicted {
        if !measured.iter().any(|m| m.0 == *name) {
            return Err(format!("'{name}' was not measured"));
        }
        if predicted.iter().filter(|p| *p == name).count() > 1 {
            return Err(format!("'{name}' is predicted twice"));
        }
    }
    if let Some(m) = measured.iter().find(|m| !predicted.contains(&m.0)) {
        return Err(format!("'{}' has no predicted rank", m.0));
    }
    let mut best: Option<(String, i64)> = None;
    for &(name, rate) in measured {
        let rank = measured.iter().filter(|m| m.1 >= rate).count() as i64 - 1;
        let guess = predicted.iter().position(|p| *p == name).unwrap() as i64;
        let shift = rank - guess;
        if best.as_ref().is_none_or(|b| shift.abs() > b.1.abs()) {
            best = Some((name.to_string(), shift));
        }
    }
    best.ok_or_else(|| "nothing was measured".to_string())

// MUTANT: signed — the largest shift, not the largest distance: only "worse than predicted" counts
    for name in predicted {
        if !measured.iter().any(|m| m.0 == *name) {
            return Err(format!("'{name}' was not measured"));
        }
        if predicted.iter().filter(|p| *p == name).count() > 1 {
            return Err(format!("'{name}' is predicted twice"));
        }
    }
    if let Some(m) = measured.iter().find(|m| !predicted.contains(&m.0)) {
        return Err(format!("'{}' has no predicted rank", m.0));
    }
    let mut best: Option<(String, i64)> = None;
    for &(name, rate) in measured {
        let rank = measured.iter().filter(|m| m.1 > rate).count() as i64;
        let guess = predicted.iter().position(|p| *p == name).unwrap() as i64;
        let shift = rank - guess;
        if best.as_ref().is_none_or(|b| shift > b.1) {
            best = Some((name.to_string(), shift));
        }
    }
    best.ok_or_else(|| "nothing was measured".to_string())

// MUTANT: last_of_equals — among equal distances keeps the last, not the first
    for name in predicted {
        if !measured.iter().any(|m| m.0 == *name) {
            return Err(format!("'{name}' was not measured"));
        }
        if predicted.iter().filter(|p| *p == name).count() > 1 {
            return Err(format!("'{name}' is predicted twice"));
        }
    }
    if let Some(m) = measured.iter().find(|m| !predicted.contains(&m.0)) {
        return Err(format!("'{}' has no predicted rank", m.0));
    }
    let mut best: Option<(String, i64)> = None;
    for &(name, rate) in measured {
        let rank = measured.iter().filter(|m| m.1 > rate).count() as i64;
        let guess = predicted.iter().position(|p| *p == name).unwrap() as i64;
        let shift = rank - guess;
        if best.as_ref().is_none_or(|b| shift.abs() >= b.1.abs()) {
            best = Some((name.to_string(), shift));
        }
    }
    best.ok_or_else(|| "nothing was measured".to_string())

// MUTANT: unchecked — trusts the prediction: a missing or unknown name is skipped
    let mut best: Option<(String, i64)> = None;
    for &(name, rate) in measured {
        let rank = measured.iter().filter(|m| m.1 > rate).count() as i64;
        let Some(guess) = predicted.iter().position(|p| *p == name) else {
            continue;
        };
        let shift = rank - guess as i64;
        if best.as_ref().is_none_or(|b| shift.abs() > b.1.abs()) {
            best = Some((name.to_string(), shift));
        }
    }
    best.ok_or_else(|| "nothing was measured".to_string())

// MUTANT: sorted_position — the rank is the position in the list sorted by rate: of two equal rates the later one gets a worse rank
    for name in predicted {
        if !measured.iter().any(|m| m.0 == *name) {
            return Err(format!("'{name}' was not measured"));
        }
        if predicted.iter().filter(|p| *p == name).count() > 1 {
            return Err(format!("'{name}' is predicted twice"));
        }
    }
    if let Some(m) = measured.iter().find(|m| !predicted.contains(&m.0)) {
        return Err(format!("'{}' has no predicted rank", m.0));
    }
    let mut sorted: Vec<(&str, f64)> = measured.to_vec();
    sorted.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
    let mut best: Option<(String, i64)> = None;
    for &(name, _) in measured {
        let rank = sorted.iter().position(|m| m.0 == name).unwrap() as i64;
        let guess = predicted.iter().position(|p| *p == name).unwrap() as i64;
        let shift = rank - guess;
        if best.as_ref().is_none_or(|b| shift.abs() > b.1.abs()) {
            best = Some((name.to_string(), shift));
        }
    }
    best.ok_or_else(|| "nothing was measured".to_string())
