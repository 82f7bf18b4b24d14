//! The naive kernel: the O(n²) sign-product loop over all sample pairs.
//!
//! It is the reference every other kernel is tested against, and for small n
//! (tens of samples) also the fastest sorting-free option: the inner loop is
//! branch-free and the compiler vectorises it.

use crate::rank::MISSING_RANK;

/// `S = Σ_{a<b} sign(u_b - u_a) · sign(v_b - v_a)` for two rank vectors of
/// equal length. Pairs tied in either vector contribute zero.
pub fn numerator(u: &[u32], v: &[u32]) -> i64 {
    sign_products::<false>(u, v)
}

/// [`numerator`] over the samples where both vectors have a value: pairs
/// touching a [`MISSING_RANK`] in either vector contribute zero.
pub fn numerator_complete(u: &[u32], v: &[u32]) -> i64 {
    sign_products::<true>(u, v)
}

/// The loop of both: with `MASKED`, rows of a missing sample are skipped and
/// a missing partner multiplies its term by 0, so the inner loop stays
/// branch-free either way.
#[inline(always)]
fn sign_products<const MASKED: bool>(u: &[u32], v: &[u32]) -> i64 {
    debug_assert_eq!(u.len(), v.len());
    let n = u.len().min(v.len());
    let (u, v) = (&u[..n], &v[..n]);
    let mut s = 0i64;
    for a in 0..n {
        let (ua, va) = (u[a], v[a]);
        if MASKED && (ua == MISSING_RANK || va == MISSING_RANK) {
            continue;
        }
        let terms = u[a + 1..].iter().zip(&v[a + 1..]).map(|(&ub, &vb)| {
            let su = i32::from(ub > ua) - i32::from(ub < ua);
            let sv = i32::from(vb > va) - i32::from(vb < va);
            if MASKED {
                su * sv * (i32::from(ub != MISSING_RANK) & i32::from(vb != MISSING_RANK))
            } else {
                su * sv
            }
        });
        // A row has n - 1 - a terms in [-1, 1]: an i32 sum (which the
        // compiler vectorises) cannot overflow below 2^31 samples.
        s += if n <= i32::MAX as usize {
            i64::from(terms.sum::<i32>())
        } else {
            terms.map(i64::from).sum::<i64>()
        };
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_cases() {
        assert_eq!(numerator(&[], &[]), 0);
        assert_eq!(numerator(&[0], &[0]), 0);
        assert_eq!(numerator(&[0, 1, 2], &[0, 1, 2]), 3);
        assert_eq!(numerator(&[0, 1, 2], &[2, 1, 0]), -3);
        // u = (1,2,3,4), v = (1,3,2,4): 5 concordant, 1 discordant
        assert_eq!(numerator(&[0, 1, 2, 3], &[0, 2, 1, 3]), 4);
        // ties contribute nothing
        assert_eq!(numerator(&[0, 0, 1], &[0, 1, 1]), 1);
        // neither do missing values
        let gap = MISSING_RANK;
        assert_eq!(numerator_complete(&[0, gap, 2, 1], &[0, 5, 1, gap]), 1);
        assert_eq!(numerator_complete(&[0, 1, 2], &[0, 1, 2]), 3);
    }
}
