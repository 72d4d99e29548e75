//! The "tch in one sitting" page of the book, as tests: every claim the primer
//! makes is asserted here, and the book includes these regions, so the primer
//! cannot drift from what tch actually does. Only `tch` and `anyhow` are used,
//! none of the course's own code.
// ANCHOR: imports
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};
// ANCHOR_END: imports

#[test]
fn a_tensor_is_a_handle() {
    // ANCHOR: handle
    let a = Tensor::zeros([3], (Kind::Float, Device::Cpu));
    let mut b = a.shallow_clone(); // a second handle on the same storage
    let _ = b.fill_(7.0); // an in-place write through b ...
    assert_eq!(a.double_value(&[0]), 7.0); // ... is seen through a

    let c = a.copy(); // a new tensor with its own storage
    let _ = b.fill_(1.0);
    assert_eq!(a.double_value(&[0]), 1.0);
    assert_eq!(c.double_value(&[0]), 7.0); // the copy kept its values
                                           // ANCHOR_END: handle
}

#[test]
fn operators_borrow_or_consume() -> anyhow::Result<()> {
    // ANCHOR: operators
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
    let b = Tensor::from_slice(&[10.0f32, 20.0, 30.0]);
    let sum = &a + &b; // borrows both: a and b stay usable
    let scaled = &a * 2.0; // a tensor and a scalar
    assert_eq!(Vec::<f32>::try_from(&sum)?, [11.0, 22.0, 33.0]);
    assert_eq!(Vec::<f32>::try_from(&scaled)?, [2.0, 4.0, 6.0]);

    let moved = a + b; // consumes a and b: they cannot be used after this
    assert!(moved.equal(&sum));
    // ANCHOR_END: operators
    Ok(())
}

#[test]
fn broadcasting_stretches_size_one_axes() -> anyhow::Result<()> {
    // ANCHOR: broadcasting
    let row = Tensor::from_slice(&[1.0f32, 2.0, 3.0]); // [3]
    let col = Tensor::from_slice(&[10.0f32, 20.0]).unsqueeze(1); // [2, 1]
    let grid = &col + &row; // [2, 1] and [3] -> [2, 3]
    assert_eq!(grid.size(), [2, 3]);
    let flat = Vec::<f32>::try_from(&grid.flatten(0, -1))?;
    assert_eq!(flat, [11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
    // ANCHOR_END: broadcasting
    Ok(())
}

#[test]
fn kind_and_device() {
    // ANCHOR: kind_device
    let ids = Tensor::from_slice(&[3i64, 4, 5]); // the Rust type decides
    assert_eq!(ids.kind(), Kind::Int64);

    let x = Tensor::zeros([2, 3], (Kind::Float, Device::Cpu));
    assert_eq!((x.kind(), x.device()), (Kind::Float, Device::Cpu));
    let half = x.to_kind(Kind::BFloat16); // a converted copy
    assert_eq!(half.kind(), Kind::BFloat16);

    let device = Device::cuda_if_available(); // the GPU if there is one
    assert_eq!(x.to_device(device).device(), device);

    let y = Tensor::zeros([3, 2], (Kind::Double, Device::Cpu));
    assert!(x.f_matmul(&y).is_err()); // Float @ Double: kinds must match
                                      // ANCHOR_END: kind_device
}

#[test]
fn var_store_names_are_paths() {
    // ANCHOR: var_store
    let vs = nn::VarStore::new(Device::Cpu);
    let root = vs.root();
    let mha = &root / "encoder" / "layers" / 0 / "mha";
    let w_q = nn::linear(&mha / "W_q", 8, 8, Default::default());

    let mut names: Vec<String> = vs.variables().into_keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "encoder.layers.0.mha.W_q.bias",
            "encoder.layers.0.mha.W_q.weight"
        ]
    );

    // A tensor made outside the VarStore is not a variable: the optimiser
    // never updates it and a checkpoint never stores it.
    let _table = Tensor::zeros([14, 8], (Kind::Float, Device::Cpu));
    assert_eq!(vs.variables().len(), 2);
    assert!(w_q.ws.requires_grad());
    // ANCHOR_END: var_store
}

#[test]
fn checkpoint_keys_are_the_var_store_names() -> anyhow::Result<()> {
    let name = format!("tch_primer_{}.safetensors", std::process::id());
    let file = std::env::temp_dir().join(name);
    // ANCHOR: checkpoint
    fn build(vs: &nn::VarStore) -> nn::Linear {
        let p = vs.root() / "encoder" / "layers" / 0 / "mha" / "W_q";
        nn::linear(p, 8, 8, Default::default())
    }
    let vs = nn::VarStore::new(Device::Cpu);
    let saved = build(&vs);
    vs.save(&file)?;

    let keys: Vec<String> = Tensor::read_safetensors(&file)?
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert!(keys.contains(&"encoder.layers.0.mha.W_q.weight".into()));

    let mut fresh = nn::VarStore::new(Device::Cpu);
    let loaded = build(&fresh); // same paths, new random weights
    fresh.load(&file)?; // matched by name
    assert!(loaded.ws.equal(&saved.ws));
    // ANCHOR_END: checkpoint
    std::fs::remove_file(&file)?;
    Ok(())
}

#[test]
fn panicking_methods_and_their_f_twins() {
    // ANCHOR: f_methods
    let x = Tensor::arange(24, (Kind::Float, Device::Cpu)).view([2, 3, 4]);
    let t = x.transpose(1, 2); // [2, 4, 3], no longer laid out row by row

    let err = t.f_view([2, 12]).unwrap_err(); // the f_ twin: a Result
    assert!(err.to_string().contains("view size is not compatible"));

    let view = std::panic::AssertUnwindSafe(|| t.view([2, 12]));
    assert!(std::panic::catch_unwind(view).is_err()); // plain view panics

    // reshape gives the same shape, copying the numbers when it must
    assert_eq!(t.reshape([2, 12]).size(), [2, 12]);
    // ANCHOR_END: f_methods
}

#[test]
fn shapes_destructure_into_tuples() -> anyhow::Result<()> {
    // ANCHOR: size3
    let x = Tensor::zeros([64, 14, 128], (Kind::Float, Device::Cpu));
    let (b, l, d) = x.size3()?; // Err unless x has exactly three axes
    assert_eq!((b, l, d), (64, 14, 128));
    assert!(x.size2().is_err());
    assert_eq!(x.size(), [64, 14, 128]); // size() is a Vec<i64>
                                         // ANCHOR_END: size3
    Ok(())
}

#[test]
fn autograd_records_and_backward_differentiates() {
    // ANCHOR: autograd
    let w = Tensor::from(3.0f32).set_requires_grad(true);
    let y = &w * &w; // y = w², recorded for backward
    y.backward(); // dy/dw = 2w
    assert_eq!(w.grad().double_value(&[]), 6.0);
    // ANCHOR_END: autograd
}

#[test]
fn no_grad_for_writes_and_for_inference() {
    // ANCHOR: no_grad
    let opts = (Kind::Float, Device::Cpu);
    let mut w = Tensor::zeros([3], opts).set_requires_grad(true);
    assert!(w.f_zero_().is_err()); // an in-place write to a variable: refused

    tch::no_grad(|| {
        let _ = w.fill_(1.0); // allowed: nothing is recorded here
    });
    assert_eq!(w.double_value(&[2]), 1.0);

    let y = tch::no_grad(|| &w * 2.0); // nothing recorded
    assert!(!y.requires_grad());
    // ANCHOR_END: no_grad
}

#[test]
fn one_training_step_after_another() -> anyhow::Result<()> {
    // ANCHOR: training_step
    let vs = nn::VarStore::new(Device::Cpu);
    let w = vs.root().var("w", &[1], nn::Init::Const(0.0));
    let mut opt = nn::Sgd::default().build(&vs, 0.1)?; // learning rate 0.1

    for step in 0..50 {
        let loss = (&w - 3.0).square().sum(Kind::Float); // (w - 3)²
        opt.zero_grad(); // forget the previous step's gradients
        loss.backward(); // d loss / dw = 2(w - 3), into w.grad()
        opt.step(); // w -= 0.1 * w.grad()
        if step == 0 {
            assert!((w.double_value(&[0]) - 0.6).abs() < 1e-6);
        }
    }
    assert!((w.double_value(&[0]) - 3.0).abs() < 1e-3);
    // ANCHOR_END: training_step
    Ok(())
}

#[test]
fn no_train_mode_the_caller_says_train() {
    // ANCHOR: train_flag
    struct Block {
        lin: nn::Linear,
        dropout: f64,
    }
    impl Block {
        fn forward(&self, x: &Tensor, train: bool) -> Tensor {
            self.lin.forward(x).dropout(self.dropout, train)
        }
    }
    let vs = nn::VarStore::new(Device::Cpu);
    let lin = nn::linear(vs.root() / "lin", 4, 1000, Default::default());
    let block = Block { lin, dropout: 0.1 };
    let x = Tensor::ones([1, 4], (Kind::Float, Device::Cpu));

    let eval = block.forward(&x, false); // no dropout: deterministic
    assert!(eval.equal(&block.forward(&x, false)));

    let train = block.forward(&x, true); // ~10 % zeroed, rest scaled
    let dropped = train.eq(0.0).sum(Kind::Int64).int64_value(&[]);
    assert!((40..=200).contains(&dropped));
    let kept = train.ne(0.0);
    let rescaled = eval.masked_select(&kept) / 0.9; // 1 / (1 - p)
    let (rtol, atol, equal_nan) = (1e-5, 1e-5, false);
    assert!(train
        .masked_select(&kept)
        .allclose(&rescaled, rtol, atol, equal_nan));
    // ANCHOR_END: train_flag
}
