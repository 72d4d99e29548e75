// Wrong solutions of ex11_anti_diagonal.

// MUTANT: off_by_one — row i expects column n − i instead of n − 1 − i
    let cols: Vec<i64> = (0..=n).map(|i| if i < n { n - i } else { n }).collect();
    let cols = Tensor::from_slice(&cols).to_device(map.device()).unsqueeze(1);
    let picked = map.narrow(0, 0, n + 1).gather(1, &cols, false);
    picked.mean(Kind::Double).double_value(&[])

// MUTANT: all_rows — averages the anti-diagonal over every row of the map
    let lt = map.size()[0];
    let cols: Vec<i64> = (0..lt).map(|i| (n - 1 - i).max(0)).collect();
    let cols = Tensor::from_slice(&cols).to_device(map.device()).unsqueeze(1);
    map.gather(1, &cols, false).mean(Kind::Double).double_value(&[])

// MUTANT: argmax_count — the share of rows whose argmax is right, not the mean weight
    let cols: Vec<i64> = (0..=n).map(|i| expected_column(i as usize, n as usize) as i64).collect();
    let cols = Tensor::from_slice(&cols).to_device(map.device());
    let best = map.narrow(0, 0, n + 1).argmax(1, false);
    best.eq_tensor(&cols).to_kind(Kind::Double).mean(Kind::Double).double_value(&[])

// MUTANT: digit_rows_only — rows 0 .. n (the digits) without row n, which looks at EOS
    let cols: Vec<i64> = (0..n)
        .map(|i| expected_column(i as usize, n as usize) as i64)
        .collect();
    let cols = Tensor::from_slice(&cols).to_device(map.device()).unsqueeze(1);
    let picked = map.narrow(0, 0, n).gather(1, &cols, false);
    picked.mean(Kind::Double).double_value(&[])
