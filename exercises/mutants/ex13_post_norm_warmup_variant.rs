// Wrong solutions of ex13_post_norm_warmup_variant.

// MUTANT: warmup_kept — Post-Norm only: the schedule still warms up
    Variant {
        name: "post-norm-no-warmup",
        change: "LN(x + f(x)), peak rate from step 1",
        chapter: "04",
        switches: Switches {
            norm: Norm::Post,
            ..Switches::COURSE
        },
        num_heads: None,
        dropout: None,
    }

// MUTANT: no_norm — takes the LayerNorms out instead of moving them
    Variant {
        name: "post-norm-no-warmup",
        change: "LN(x + f(x)), peak rate from step 1",
        chapter: "04",
        switches: Switches {
            norm: Norm::None,
            warmup: false,
            ..Switches::COURSE
        },
        num_heads: None,
        dropout: None,
    }

// MUTANT: study_name — the study's own name: its table would mix the two rows
    Variant {
        name: "post-norm",
        change: "LN(x + f(x)), peak rate from step 1",
        chapter: "04",
        switches: Switches {
            norm: Norm::Post,
            warmup: false,
            ..Switches::COURSE
        },
        num_heads: None,
        dropout: None,
    }

// MUTANT: no_dropout_too — also switches dropout off, a second change
    Variant {
        name: "post-norm-no-warmup",
        change: "LN(x + f(x)), peak rate from step 1",
        chapter: "04",
        switches: Switches {
            norm: Norm::Post,
            warmup: false,
            ..Switches::COURSE
        },
        num_heads: None,
        dropout: Some(0.0),
    }
