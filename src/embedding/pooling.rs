//! From token states to one unit vector per text: mean pooling over the attention mask, then
//! L2 normalisation, as sentence-transformers' `Pooling(mean)` and `Normalize` modules do.

use candle_core::{D, DType, Result, Tensor};

/// Floor of the token count in [`mean_pool`], as in sentence-transformers
/// (`torch.clamp(mask.sum(1), min=1e-9)`): a row with no real token pools to zeros instead of
/// NaN.
pub const MIN_TOKEN_COUNT: f64 = 1e-9;

/// Floor of the norm in [`l2_normalize`], as `torch.nn.functional.normalize` (`eps=1e-12`): a
/// zero vector stays zero instead of becoming NaN.
pub const MIN_NORM: f64 = 1e-12;

/// Mean of the token states of each text, counting only the tokens the mask keeps.
///
/// ```text
/// e_b = Σ_t m_bt · h_bt  /  max(Σ_t m_bt, 1e-9)
/// ```
///
/// `hidden` is `[batch, tokens, dim]` (f32), `mask` is `[batch, tokens]` with 1 for a real token
/// and 0 for padding (any numeric dtype). Returns `[batch, dim]` in `hidden`'s dtype.
///
/// # Errors
/// A candle shape error when `mask` is not `[batch, tokens]` of `hidden`.
///
/// Source: Reimers & Gurevych, "Sentence-BERT: Sentence Embeddings using Siamese
/// BERT-Networks", EMNLP 2019, §3 (MEAN strategy).
pub fn mean_pool(hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (batch, tokens, _dim) = hidden.dims3()?;
    let mask = mask.to_dtype(hidden.dtype())?.reshape((batch, tokens, 1))?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.maximum(MIN_TOKEN_COUNT)?;
    summed.broadcast_div(&counts)
}

/// Each row divided by its Euclidean norm.
///
/// ```text
/// u_b = e_b / max(‖e_b‖₂, 1e-12)
/// ```
///
/// `x` is `[batch, dim]`; returns `[batch, dim]`, every row of norm 1 (or 0 when it was 0).
/// With unit rows, the dot product of two embeddings is their cosine similarity.
///
/// # Errors
/// A candle error when `x` is not of rank 2 or not a float dtype.
pub fn l2_normalize(x: &Tensor) -> Result<Tensor> {
    if !matches!(
        x.dtype(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16
    ) {
        candle_core::bail!("l2_normalize needs a float tensor, got {:?}", x.dtype());
    }
    let _ = x.dims2()?;
    let norm = x.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?.maximum(MIN_NORM)?;
    x.broadcast_div(&norm)
}

/// [`mean_pool`] then [`l2_normalize`] for one unpadded text: `states` is `[tokens, dim]` f32,
/// row-major (every token real); returns its unit vector of `dim` values (zeros for no token).
///
/// # Errors
/// A candle shape error when `states` does not hold `tokens · dim` values.
pub fn sentence_vector(states: Vec<f32>, tokens: usize, dim: usize) -> Result<Vec<f32>> {
    let device = candle_core::Device::Cpu;
    let hidden = Tensor::from_vec(states, (1, tokens, dim), &device)?;
    let mask = Tensor::ones((1, tokens), DType::F32, &device)?;
    let mut rows = l2_normalize(&mean_pool(&hidden, &mask)?)?.to_vec2::<f32>()?;
    Ok(rows.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// Tolerance for f32 arithmetic on a handful of small numbers.
    const EPS: f32 = 1e-6;

    fn close(got: &[Vec<f32>], want: &[&[f32]]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.len(), w.len());
            for (a, b) in g.iter().zip(w.iter()) {
                assert!((a - b).abs() <= EPS, "{g:?} vs {w:?}");
            }
        }
    }

    #[test]
    fn mean_pool_ignores_masked_tokens() {
        let dev = Device::Cpu;
        // Two texts of three token slots, dim 2; the second text has one padding slot.
        let hidden = Tensor::new(
            &[
                [[1f32, 2.], [3., 4.], [5., 6.]],
                [[1., -1.], [3., 1.], [100., 100.]],
            ],
            &dev,
        )
        .unwrap();
        let mask = Tensor::new(&[[1u32, 1, 1], [1, 1, 0]], &dev).unwrap();
        let pooled = mean_pool(&hidden, &mask).unwrap().to_vec2::<f32>().unwrap();
        close(&pooled, &[&[3., 4.], &[2., 0.]]);
    }

    #[test]
    fn mean_pool_of_an_all_padding_row_is_zero_not_nan() {
        let dev = Device::Cpu;
        let hidden = Tensor::new(&[[[7f32, 8.], [9., 10.]]], &dev).unwrap();
        let mask = Tensor::new(&[[0u32, 0]], &dev).unwrap();
        let pooled = mean_pool(&hidden, &mask).unwrap().to_vec2::<f32>().unwrap();
        close(&pooled, &[&[0., 0.]]);
    }

    #[test]
    fn mean_pool_rejects_a_mask_of_the_wrong_shape() {
        let dev = Device::Cpu;
        let hidden = Tensor::zeros((2, 3, 4), DType::F32, &dev).unwrap();
        let mask = Tensor::ones((2, 2), DType::U32, &dev).unwrap();
        assert!(mean_pool(&hidden, &mask).is_err());
    }

    #[test]
    fn l2_normalize_gives_unit_rows_and_keeps_zero_rows() {
        let dev = Device::Cpu;
        let x = Tensor::new(&[[3f32, 4.], [0., 0.], [-2., 0.]], &dev).unwrap();
        let unit = l2_normalize(&x).unwrap().to_vec2::<f32>().unwrap();
        close(&unit, &[&[0.6, 0.8], &[0., 0.], &[-1., 0.]]);
    }

    #[test]
    fn sentence_vector_is_the_normalised_mean_of_one_texts_states() {
        // Mean of (1, 2) and (5, 2) is (3, 2); its norm √13.
        let v = sentence_vector(vec![1., 2., 5., 2.], 2, 2).unwrap();
        let n = 13f32.sqrt();
        close(&[v], &[&[3. / n, 2. / n]]);
        close(&[sentence_vector(vec![], 0, 3).unwrap()], &[&[0., 0., 0.]]);
        assert!(sentence_vector(vec![1., 2., 3.], 2, 2).is_err());
    }

    #[test]
    fn l2_normalize_rejects_integer_and_rank_3_input() {
        let dev = Device::Cpu;
        assert!(l2_normalize(&Tensor::new(&[[1u32, 2]], &dev).unwrap()).is_err());
        assert!(l2_normalize(&Tensor::zeros((1, 2, 2), DType::F32, &dev).unwrap()).is_err());
    }
}
