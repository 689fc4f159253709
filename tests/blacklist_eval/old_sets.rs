//! The issue-15 matcher on the first two sets: the development set its thresholds, word
//! tables and guard rules were chosen on, and the fresh set checked after. The assertions are
//! the targets and floors set then; the classifier that replaced it (issue 30) is measured on
//! both sets beside it.

#[cfg(test)]
mod lexical {

    use crate::harness::*;
    use meta_utl_mcp::service::lessons::guard;
    use meta_utl_mcp::service::lessons::guard::GuardReason;
    use meta_utl_mcp::service::lessons::lexical::LexicalText;
    use meta_utl_mcp::service::lessons::matching::{
        LEXICAL_THRESHOLD, Variant, dice_coefficient, lexical_similarity,
    };
    use meta_utl_mcp::service::lessons::text::{normalise_strategy, word_tokens};

    /// Folds of the cross-validation over tasks.
    const FOLDS: usize = 5;

    // Targets, on the development set, held out (pooled over the folds). Set just under what
    // the matcher reaches (figures in the doc of `LEXICAL_THRESHOLD`), so that a change to the
    // word tables or the guard that loses ground fails here.

    /// Lexical score alone, no guard: F1 (issue 15 asks ≥ 0.75).
    const LEXICAL_F1_TARGET: f64 = 0.80;
    /// Lexical score with the guard, as the server decides: F1.
    const LEXICAL_GUARD_F1_TARGET: f64 = 0.95;
    /// Lexical score with the guard: reversals, changed targets and changed numbers answered
    /// not blacklisted.
    const HARD_LET_THROUGH_TARGET: f64 = 0.95;
    /// Positives that the score alone blocks but the guard stops, at most.
    const GUARD_FALSE_STOPS_MAX: usize = 3;

    // Floors on the fresh set (threshold from the development set, nothing chosen on it), set
    // under what it measures now. A regression guard, not a goal.

    /// Lexical with the guard, F1 on the fresh set (first run 0.85; 0.91 after the bug fixes
    /// that run showed).
    const FRESH_F1_FLOOR: f64 = 0.88;
    /// Lexical with the guard, hard negatives let through on the fresh set (first run 0.84;
    /// 0.91 after the fixes).
    const FRESH_HARD_LET_THROUGH_FLOOR: f64 = 0.88;

    // The classifier of issue 30 (what the server decides with now), on these sets: floors at
    // the measured F1 minus 0.02, rounded down (measured on 2026-11-27, see docs/MATCHING.md).

    /// F1 of the shipped lexical classifier on the first development set.
    const CLASSIFIER_DEV_F1_FLOOR: f64 = 0.88; // 0.902
    /// F1 of the shipped lexical classifier on the fresh set.
    const CLASSIFIER_FRESH_F1_FLOOR: f64 = 0.83; // 0.853

    fn lexical(l: &str, p: &str) -> f64 {
        lexical_similarity(&LexicalText::new(l), &LexicalText::new(p))
    }

    /// The shipped lexical classifier's decisions on `pairs` (issue 30).
    fn classified_report(pairs: &[Pair]) -> Report {
        let model = Variant::Lexical.classifier();
        let inputs = crate::classified::inputs(pairs, None);
        evaluate(
            &crate::classified::scored(pairs, &inputs, model),
            model.threshold,
        )
    }

    fn rules(l: &str, p: &str) -> Option<GuardReason> {
        guard::check(&LexicalText::new(l), &LexicalText::new(p))
    }

    /// Today's `similar` rule: word-Dice on the raw tokens.
    fn legacy(l: &str, p: &str) -> f64 {
        let (l, p) = (normalise_strategy(l), normalise_strategy(p));
        dice_coefficient(&word_tokens(&l), &word_tokens(&p))
    }

    /// Run with `cargo test --test blacklist_eval -- --nocapture` to see the tables.
    #[test]
    fn blacklist_eval() {
        let dev = dev_set();
        assert!(dev.len() >= 320, "{} pairs", dev.len());
        for k in Kind::ALL {
            let n = dev.iter().filter(|p| p.kind == k).count();
            assert!(n >= 15, "{} has {n} pairs", k.name());
        }

        let legacy_scored = score_pairs(&dev, &legacy, None);
        let legacy_report = evaluate(&legacy_scored, 0.8);
        eprintln!(
            "{}",
            table(
                "development set, today's rule: word Dice >= 0.8",
                &legacy_report
            )
        );

        let alone = cross_validate(&score_pairs(&dev, &lexical, None), FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, lexical alone, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    alone.fold_thresholds, alone.final_threshold
                ),
                &alone.held_out
            )
        );

        let guarded_scored = score_pairs(&dev, &lexical, Some(&rules));
        let guarded = cross_validate(&guarded_scored, FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, lexical + guard, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    guarded.fold_thresholds, guarded.final_threshold
                ),
                &guarded.held_out
            )
        );
        eprintln!(
            "development set, lexical + guard at LEXICAL_THRESHOLD = {LEXICAL_THRESHOLD}, errors:\n{}",
            errors(&dev, &guarded_scored, LEXICAL_THRESHOLD)
        );

        // The constant sits on the plateau the procedure chose: same decisions on every pair.
        let at_constant = evaluate(&guarded_scored, LEXICAL_THRESHOLD);
        assert_eq!(
            at_constant.overall, guarded.in_sample.overall,
            "LEXICAL_THRESHOLD {LEXICAL_THRESHOLD} no longer decides like the cross-validated choice {}",
            guarded.final_threshold
        );
        // The server now decides with the classifier (issue 30): its figures on these sets,
        // with the shipped weights (fitted on the agent-style development set only, so both
        // sets are held out for it).
        let classifier_dev = classified_report(&dev);
        eprintln!(
            "{}",
            table(
                "development set (issue 15), classifier (lexical) as shipped",
                &classifier_dev
            )
        );
        let classifier_fresh = classified_report(&fresh_set());
        eprintln!(
            "{}",
            table(
                "fresh set, classifier (lexical) as shipped",
                &classifier_fresh
            )
        );
        for (what, r, floor) in [
            ("development set", &classifier_dev, CLASSIFIER_DEV_F1_FLOOR),
            ("fresh set", &classifier_fresh, CLASSIFIER_FRESH_F1_FLOOR),
        ] {
            assert!(
                r.f1() >= floor,
                "classifier on the {what}: F1 {:.3} < {floor}",
                r.f1()
            );
        }

        let fresh = fresh_set();
        let fresh_alone = evaluate(&score_pairs(&fresh, &lexical, None), alone.final_threshold);
        eprintln!(
            "{}",
            table(
                &format!(
                    "fresh set, lexical alone at {:.4} (chosen on the development set)",
                    alone.final_threshold
                ),
                &fresh_alone
            )
        );
        let fresh_scored = score_pairs(&fresh, &lexical, Some(&rules));
        let fresh_guarded = evaluate(&fresh_scored, LEXICAL_THRESHOLD);
        eprintln!(
            "{}",
            table(
                &format!("fresh set, lexical + guard at LEXICAL_THRESHOLD = {LEXICAL_THRESHOLD}"),
                &fresh_guarded
            )
        );
        eprintln!(
            "fresh set, lexical + guard, errors:\n{}",
            errors(&fresh, &fresh_scored, LEXICAL_THRESHOLD)
        );

        assert!(
            alone.held_out.f1() >= LEXICAL_F1_TARGET,
            "lexical alone: held-out F1 {:.3} < {LEXICAL_F1_TARGET}",
            alone.held_out.f1()
        );
        assert!(
            guarded.held_out.f1() >= LEXICAL_GUARD_F1_TARGET,
            "lexical + guard: held-out F1 {:.3} < {LEXICAL_GUARD_F1_TARGET}",
            guarded.held_out.f1()
        );
        assert!(
            guarded.held_out.hard_let_through() >= HARD_LET_THROUGH_TARGET,
            "lexical + guard: hard negatives let through {:.3} < {HARD_LET_THROUGH_TARGET}",
            guarded.held_out.hard_let_through()
        );
        assert!(
            guarded.held_out.guard_blocked_positives <= GUARD_FALSE_STOPS_MAX,
            "the guard stopped {} positives (at most {GUARD_FALSE_STOPS_MAX})",
            guarded.held_out.guard_blocked_positives
        );
        assert!(
            fresh_guarded.f1() >= FRESH_F1_FLOOR,
            "fresh set: F1 {:.3} < {FRESH_F1_FLOOR}",
            fresh_guarded.f1()
        );
        assert!(
            fresh_guarded.hard_let_through() >= FRESH_HARD_LET_THROUGH_FLOOR,
            "fresh set: hard negatives let through {:.3} < {FRESH_HARD_LET_THROUGH_FLOOR}",
            fresh_guarded.hard_let_through()
        );
    }
}

/// The embedding matcher on the development set: the cosine of all-MiniLM-L6-v2 vectors with
/// the guard, as the server decides (needs the weights, found through
/// `META_UTL_EMBEDDING_MODEL`; says it skipped otherwise).
#[cfg(all(test, feature = "embedding"))]
mod embedding {
    use crate::harness::*;

    use meta_utl_mcp::embedding::Embedder;
    use meta_utl_mcp::service::lessons::guard;
    use meta_utl_mcp::service::lessons::lexical::LexicalText;
    use meta_utl_mcp::service::lessons::vectors::{EMBEDDING_THRESHOLD, cosine_score};
    use meta_utl_mcp::tools::lessons::check::RELATED_MIN_SCORE;

    /// Folds of the cross-validation over tasks.
    const FOLDS: usize = 5;

    // Targets, held out on the development set (issue 15: precision ≥ 0.85, recall ≥ 0.90,
    // hard negatives let through ≥ 70 %), and floors on the fresh set just under what the
    // matcher reaches (figures in the doc of `EMBEDDING_THRESHOLD`).

    /// Precision, held out.
    const PRECISION_TARGET: f64 = 0.85;
    /// Recall, held out.
    const RECALL_TARGET: f64 = 0.90;
    /// Reversals, changed targets and changed numbers answered not blacklisted, held out.
    const HARD_LET_THROUGH_TARGET: f64 = 0.70;
    /// F1 on the fresh set at `EMBEDDING_THRESHOLD` (measured 0.91).
    const FRESH_F1_FLOOR: f64 = 0.88;
    /// Hard negatives let through on the fresh set (measured 0.91).
    const FRESH_HARD_LET_THROUGH_FLOOR: f64 = 0.85;

    /// Run with `META_UTL_EMBEDDING_MODEL=DIR cargo test --test blacklist_eval old_sets --
    /// --nocapture` to see the tables.
    #[test]
    fn embedding_matcher_meets_its_targets() {
        let Some(dir) = crate::common::real_model("embedding_matcher_meets_its_targets") else {
            return;
        };
        let model = Embedder::load(&dir).expect("load the model");
        let dev = dev_set();
        let fresh = fresh_set();
        let mut vectors = embed_all(&model, &dev);
        vectors.extend(embed_all(&model, &fresh));
        let cosine = |l: &str, p: &str| cosine_score(&vectors[l], &vectors[p]);
        let rules = |l: &str, p: &str| guard::check(&LexicalText::new(l), &LexicalText::new(p));

        let alone = cross_validate(&score_pairs(&dev, &cosine, None), FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, cosine alone, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    alone.fold_thresholds, alone.final_threshold
                ),
                &alone.held_out
            )
        );
        let scored = score_pairs(&dev, &cosine, Some(&rules));
        let cv = cross_validate(&scored, FOLDS);
        eprintln!(
            "{}",
            table(
                &format!(
                    "development set, cosine + guard, held out ({FOLDS} folds by task; thresholds {:.3?}; on all pairs {:.4})",
                    cv.fold_thresholds, cv.final_threshold
                ),
                &cv.held_out
            )
        );
        // The constant sits on the plateau the procedure chose: same decisions on every pair.
        assert_eq!(
            evaluate(&scored, EMBEDDING_THRESHOLD).overall,
            cv.in_sample.overall,
            "EMBEDDING_THRESHOLD {EMBEDDING_THRESHOLD} no longer decides like the \
             cross-validated choice {}",
            cv.final_threshold
        );
        let fresh_report = evaluate(
            &score_pairs(&fresh, &cosine, Some(&rules)),
            EMBEDDING_THRESHOLD,
        );
        eprintln!(
            "{}",
            table(
                &format!(
                    "fresh set, cosine + guard at EMBEDDING_THRESHOLD = {EMBEDDING_THRESHOLD}"
                ),
                &fresh_report
            )
        );
        // Unrelated pairs score under the related-lessons floor.
        let unrelated_max = dev
            .iter()
            .filter(|p| p.kind == Kind::Unrelated)
            .map(|p| cosine(&p.lesson, &p.proposal))
            .fold(0.0, f64::max);
        eprintln!("highest cosine of an unrelated pair: {unrelated_max:.3}");
        assert!(unrelated_max < RELATED_MIN_SCORE, "{unrelated_max}");

        let held = &cv.held_out.overall;
        let (p, r) = (held.precision().unwrap(), held.recall().unwrap());
        assert!(
            p >= PRECISION_TARGET,
            "held-out precision {p:.3} < {PRECISION_TARGET}"
        );
        assert!(
            r >= RECALL_TARGET,
            "held-out recall {r:.3} < {RECALL_TARGET}"
        );
        let hard = cv.held_out.hard_let_through();
        assert!(
            hard >= HARD_LET_THROUGH_TARGET,
            "hard negatives let through {hard:.3} < {HARD_LET_THROUGH_TARGET}"
        );
        assert!(
            fresh_report.f1() >= FRESH_F1_FLOOR,
            "fresh set: F1 {:.3} < {FRESH_F1_FLOOR}",
            fresh_report.f1()
        );
        assert!(
            fresh_report.hard_let_through() >= FRESH_HARD_LET_THROUGH_FLOOR,
            "fresh set: hard negatives let through {:.3} < {FRESH_HARD_LET_THROUGH_FLOOR}",
            fresh_report.hard_let_through()
        );
    }
}
