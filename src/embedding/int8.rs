//! [`Int8Bert`]: the BERT encoder with 8-bit integer matrix products, for CPUs with AVX-512
//! VNNI, one text at a time.
//!
//! A check embeds one proposal of 10 to 60 tokens. With f32 weights its forward pass spends
//! about 20 ms in the encoder's 36 linear layers on the machine of `docs/PERFORMANCE.md`
//! (candle's matrix products reach about 55 GFLOP/s on so few rows). The same products in
//! 8-bit integers with `vpdpbusd` (64 multiply-adds per instruction, summed into i32 without
//! saturation) reach about 370 G operations/s there, so a whole pass of 33 tokens takes about
//! 5 ms, attention, GELU and layer norms included.
//!
//! Quantisation is *dynamic* (Zafrir et al., "Q8BERT: Quantized 8Bit BERT", 2019; the scheme
//! of ONNX Runtime's `DynamicQuantizeLinear` + `MatMulInteger`): weights symmetric per output
//! column, once at load; activations asymmetric per token row, at each product, so a row that
//! is mostly positive (after GELU) uses all 256 levels:
//!
//! ```text
//! weights, per output column n:  s_n = max_k |W[n,k]| / 127,   Wq[n,k] = round(W[n,k] / s_n)
//! activations, per token row t:  lo = min(x_t, 0), hi = max(x_t, 0),
//!                                a_t = (hi − lo) / 255,  z_t = round(−lo / a_t),
//!                                xq[t,k] = round(x[t,k] / a_t) + z_t ∈ [0, 255]
//! y[t,n] = a_t · s_n · (Σ_k xq[t,k] · Wq[n,k] − z_t · Σ_k Wq[n,k]) + b[n]
//! ```
//!
//! `vpdpbusd` multiplies the unsigned activation bytes by the signed weight bytes; every
//! integer sum is exact (at most 1536 · 255 · 127 < 2³¹). The error is the rounding of `x` and
//! `W` to 256 levels: all-MiniLM-L6-v2's vectors stay at a cosine of 0.997-0.9994 from the
//! f32 ones (0.9935 for the empty text; `tests/embedding.rs`).
//!
//! Everything else — embeddings, layer norms, attention, GELU — is f32, as in the f32 engine.
//! A single text needs no padding or attention mask. The result is the last hidden states;
//! `Embedder` pools and normalises them with `pooling.rs`, as it does candle's.

use std::collections::HashMap;

use candle_core::Tensor;
use candle_transformers::models::bert::{Config, HiddenAct};

/// Output columns per weight panel: one 512-bit register of i32 sums.
const PANEL: usize = 16;
/// Input coordinates per `vpdpbusd` lane: four bytes summed into one i32.
const QUAD: usize = 4;
/// Token rows per call of the micro-kernel.
const KERNEL_ROWS: usize = 6;
/// Panels per call of the micro-kernel: 6 × 4 accumulators fill 24 of the 32 registers.
const KERNEL_PANELS: usize = 4;
/// Largest quantised magnitude of a weight (symmetric, so zero stays exactly zero).
const QMAX: f32 = 127.0;
/// Steps of an activation byte: `0..=255` spans the row's range.
const LEVELS: f32 = 255.0;
/// Widest input a layer may have: its i32 sums stay exact below `i32::MAX / (255 · 127)`.
const MAX_INPUTS: usize = (i32::MAX as usize) / (255 * 127);

/// Whether this CPU runs [`Int8Bert`]: AVX-512 F, BW and VNNI, detected at run time.
pub fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A linear layer `y = x · Wᵀ + b` with `W` quantised per output column.
struct QuantizedLinear {
    /// Input width (`W`'s second dimension).
    inputs: usize,
    /// Output width (`W`'s first dimension).
    outputs: usize,
    /// Input width rounded up to a multiple of [`QUAD`] (zero weights beyond `inputs`).
    padded_inputs: usize,
    /// `Wq` as panels of [`PANEL`] columns: `[outputs / PANEL][padded_inputs / QUAD][PANEL][QUAD]`
    /// bytes, so one 64-byte load gives four inputs of sixteen columns. Columns beyond
    /// `outputs` are zero.
    packed: Vec<i8>,
    /// `s_n` per output column (`outputs` rounded up to a panel).
    scale: Vec<f32>,
    /// `Σ_k Wq[n,k]` per output column, to take the activations' zero point out of the sums.
    column_sum: Vec<i32>,
    /// `b`, `outputs` values.
    bias: Vec<f32>,
}

impl QuantizedLinear {
    /// Quantises `weight` (`[outputs, inputs]`, row-major) and keeps `bias` (`[outputs]`).
    fn new(weight: &[f32], bias: &[f32], outputs: usize, inputs: usize) -> QuantizedLinear {
        debug_assert_eq!(weight.len(), outputs * inputs);
        let padded_inputs = inputs.div_ceil(QUAD) * QUAD;
        let panels = outputs.div_ceil(PANEL);
        let quads = padded_inputs / QUAD;
        let mut packed = vec![0i8; panels * PANEL * padded_inputs];
        let mut scale = vec![0.0f32; panels * PANEL];
        let mut column_sum = vec![0i32; panels * PANEL];
        for n in 0..outputs {
            let row = &weight[n * inputs..(n + 1) * inputs];
            let max = row.iter().fold(0.0f32, |m, w| m.max(w.abs()));
            let s = if max > 0.0 { max / QMAX } else { 1.0 };
            scale[n] = s;
            let (panel, lane) = (n / PANEL, n % PANEL);
            let mut sum = 0i32;
            for (k, &w) in row.iter().enumerate() {
                let q = (w / s).round().clamp(-QMAX, QMAX) as i8;
                sum += i32::from(q);
                let (quad, byte) = (k / QUAD, k % QUAD);
                packed[((panel * quads + quad) * PANEL + lane) * QUAD + byte] = q;
            }
            column_sum[n] = sum;
        }
        QuantizedLinear {
            inputs,
            outputs,
            padded_inputs,
            packed,
            scale,
            column_sum,
            bias: bias.to_vec(),
        }
    }

    /// `x · Wᵀ + b` for `rows` token rows: `x` is `[rows, inputs]`, the result `[rows,
    /// outputs]`, both row-major f32.
    #[inline(always)]
    fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        debug_assert_eq!(x.len(), rows * self.inputs);
        // Quantise each row to bytes over its own range [min(x, 0), max(x, 0)]: padding bytes
        // are overwritten per row with the row's zero point (their weights are 0 anyway).
        let mut xq = vec![0u8; rows * self.padded_inputs];
        let mut row_scale = vec![0.0f32; rows];
        let mut zero_point = vec![0i32; rows];
        for t in 0..rows {
            let row = &x[t * self.inputs..(t + 1) * self.inputs];
            let (lo, hi) = min_max(row);
            let a = if hi > lo { (hi - lo) / LEVELS } else { 1.0 };
            let inv = 1.0 / a;
            let z = (-lo * inv).round_ties_even().clamp(0.0, LEVELS);
            row_scale[t] = a;
            zero_point[t] = z as i32;
            let bytes = &mut xq[t * self.padded_inputs..(t + 1) * self.padded_inputs];
            quantize(row, inv, z, &mut bytes[..self.inputs]);
            bytes[self.inputs..].fill(z as u8);
        }
        let columns = self.scale.len();
        let mut sums = vec![0i32; rows * columns];
        integer_product(self, &xq, rows, &mut sums);
        let mut y = vec![0.0f32; rows * self.outputs];
        for t in 0..rows {
            let (sum_row, y_row) = (
                &sums[t * columns..t * columns + self.outputs],
                &mut y[t * self.outputs..(t + 1) * self.outputs],
            );
            let (a, z) = (row_scale[t], zero_point[t]);
            for ((((y, &sum), &column_sum), &s), &b) in y_row
                .iter_mut()
                .zip(sum_row)
                .zip(&self.column_sum)
                .zip(&self.scale)
                .zip(&self.bias)
            {
                *y = a * s * (sum - z * column_sum) as f32 + b;
            }
        }
        y
    }
}

/// `bytes[k] = clamp(round(values[k] · inv + z), 0, 255)`, rounding ties to even.
#[inline(always)]
fn quantize(values: &[f32], inv: f32, z: f32, bytes: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if supported() {
        // SAFETY: `quantize_avx512` needs AVX-512 F, detected just above.
        unsafe { quantize_avx512(values, inv, z, bytes) };
        return;
    }
    quantize_portable(values, inv, z, bytes);
}

/// [`quantize`] in plain Rust.
#[inline(always)]
fn quantize_portable(values: &[f32], inv: f32, z: f32, bytes: &mut [u8]) {
    for (dst, &v) in bytes.iter_mut().zip(values) {
        *dst = (v * inv + z).round_ties_even().clamp(0.0, LEVELS) as u8;
    }
}

/// [`quantize`] sixteen values at a time: multiply, add, round to nearest even
/// (`vrndscaleps`), clamp, convert and narrow to bytes (`vpmovdb`); the same bytes as
/// [`quantize_portable`] (tested).
///
/// # Safety
/// The CPU must have AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn quantize_avx512(values: &[f32], inv: f32, z: f32, bytes: &mut [u8]) {
    use std::arch::x86_64::{
        __m128i, _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT, _mm_storeu_si128, _mm512_add_ps,
        _mm512_cvtepi32_epi8, _mm512_cvtps_epi32, _mm512_loadu_ps, _mm512_max_ps, _mm512_min_ps,
        _mm512_mul_ps, _mm512_roundscale_ps, _mm512_set1_ps, _mm512_setzero_ps,
    };
    let n = values.len().min(bytes.len());
    let (inv_v, z_v, top) = (
        _mm512_set1_ps(inv),
        _mm512_set1_ps(z),
        _mm512_set1_ps(LEVELS),
    );
    let mut k = 0;
    while k + LANES <= n {
        // SAFETY: `k + 16 ≤ n ≤ values.len()`.
        let v = unsafe { _mm512_loadu_ps(values.as_ptr().add(k)) };
        let v = _mm512_add_ps(_mm512_mul_ps(v, inv_v), z_v);
        let v = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
        let v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), top);
        let b = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v));
        // SAFETY: `k + 16 ≤ n ≤ bytes.len()`.
        unsafe { _mm_storeu_si128(bytes.as_mut_ptr().add(k).cast::<__m128i>(), b) };
        k += LANES;
    }
    quantize_portable(&values[k..n], inv, z, &mut bytes[k..n]);
}

/// Lanes of the f32 reductions below: independent partial results the compiler keeps in one
/// vector register (a float sum is not reassociated otherwise).
const LANES: usize = 16;

/// `(min(values ∪ {0}), max(values ∪ {0}))`: the range an activation row is quantised over,
/// widened to hold 0 so that the zero point is a whole byte.
#[inline(always)]
fn min_max(values: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = ([0.0f32; LANES], [0.0f32; LANES]);
    let (chunks, tail) = values.as_chunks::<LANES>();
    for chunk in chunks {
        for ((l, h), v) in lo.iter_mut().zip(&mut hi).zip(chunk) {
            *l = l.min(*v);
            *h = h.max(*v);
        }
    }
    let lo = tail.iter().chain(&lo).fold(0.0f32, |m, v| m.min(*v));
    let hi = tail.iter().chain(&hi).fold(0.0f32, |m, v| m.max(*v));
    (lo, hi)
}

/// The largest of `values` (−∞ for none).
#[inline(always)]
fn max_of(values: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let (chunks, tail) = values.as_chunks::<LANES>();
    for chunk in chunks {
        for (m, v) in lanes.iter_mut().zip(chunk) {
            *m = m.max(*v);
        }
    }
    tail.iter()
        .chain(&lanes)
        .fold(f32::NEG_INFINITY, |m, v| m.max(*v))
}

/// `Σ a_i · b_i` over the shorter of the two.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let (a_chunks, a_tail) = a.as_chunks::<LANES>();
    let (b_chunks, b_tail) = b.as_chunks::<LANES>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for ((s, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// `Σ v` over `values`.
#[inline(always)]
fn sum(values: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let (chunks, tail) = values.as_chunks::<LANES>();
    for chunk in chunks {
        for (s, v) in lanes.iter_mut().zip(chunk) {
            *s += v;
        }
    }
    lanes.iter().sum::<f32>() + tail.iter().sum::<f32>()
}

/// `Σ (v − center)²` over `values`.
#[inline(always)]
fn squared_deviations(values: &[f32], center: f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let (chunks, tail) = values.as_chunks::<LANES>();
    for chunk in chunks {
        for (q, v) in lanes.iter_mut().zip(chunk) {
            *q += (v - center) * (v - center);
        }
    }
    let tail: f32 = tail.iter().map(|v| (v - center) * (v - center)).sum();
    lanes.iter().sum::<f32>() + tail
}

/// `erf(x)` in f32 as a ratio of polynomials on `x` clamped to [-4, 4] (beyond it `erf` is
/// ±1 in f32), without branches or `exp`, so a loop over it vectorises. Largest error against
/// `libm::erff` 4.8e-7 (tested), far below the int8 rounding of the layer that follows. The
/// coefficients are those of Eigen's `generic_fast_erf_float` (also XLA's f32 `erf`).
#[inline(always)]
fn erf(x: f32) -> f32 {
    const ALPHA: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ];
    const BETA: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_473_9e-2,
    ];
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = ALPHA[0];
    for c in &ALPHA[1..] {
        p = p * x2 + c;
    }
    let mut q = BETA[0];
    for c in &BETA[1..] {
        q = q * x2 + c;
    }
    x * p / q
}

/// `sums[t, n] = Σ_k xq[t, k] · Wq[n, k]` (unsigned activation bytes times signed weights),
/// `sums` being `[rows, panels · PANEL]`.
fn integer_product(layer: &QuantizedLinear, xq: &[u8], rows: usize, sums: &mut [i32]) {
    assert!(xq.len() == rows * layer.padded_inputs && sums.len() == rows * layer.scale.len());
    #[cfg(target_arch = "x86_64")]
    if supported() {
        // SAFETY: `product_vnni` needs AVX-512 F, BW and VNNI, detected just above; the
        // assertion above gives the slice lengths it indexes within.
        unsafe { product_vnni(layer, xq, rows, sums) };
        return;
    }
    product_portable(layer, xq, rows, sums);
}

/// [`integer_product`] in plain Rust: the reference the VNNI kernel is tested against.
fn product_portable(layer: &QuantizedLinear, xq: &[u8], rows: usize, sums: &mut [i32]) {
    let (columns, quads) = (layer.scale.len(), layer.padded_inputs / QUAD);
    for t in 0..rows {
        let x = &xq[t * layer.padded_inputs..(t + 1) * layer.padded_inputs];
        for n in 0..columns {
            let (panel, lane) = (n / PANEL, n % PANEL);
            let mut acc = 0i32;
            for quad in 0..quads {
                let w = &layer.packed[((panel * quads + quad) * PANEL + lane) * QUAD..][..QUAD];
                for byte in 0..QUAD {
                    acc += i32::from(x[quad * QUAD + byte]) * i32::from(w[byte]);
                }
            }
            sums[t * columns + n] = acc;
        }
    }
}

/// [`integer_product`] with AVX-512 VNNI: blocks of [`KERNEL_ROWS`] rows × [`KERNEL_PANELS`]
/// panels held in registers ([`block_vnni`]); panels outer, rows inner, so a block of panels
/// (24 KiB of weights for 384 inputs) stays in the L1 cache while every row block passes over
/// it.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VNNI; `xq` must hold `rows · padded_inputs` bytes and
/// `sums` `rows · panels · PANEL` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn product_vnni(layer: &QuantizedLinear, xq: &[u8], rows: usize, sums: &mut [i32]) {
    let panels = layer.scale.len() / PANEL;
    let mut p0 = 0;
    while p0 < panels {
        let block_panels = (panels - p0).min(KERNEL_PANELS);
        let mut t0 = 0;
        while t0 < rows {
            let block_rows = (rows - t0).min(KERNEL_ROWS);
            // SAFETY: the caller's guarantees, and the block lies inside `rows` × `panels`.
            // The full block gets constant loop bounds (its accumulators stay in registers);
            // the edges share one variant with the largest bounds and skip the excess.
            unsafe {
                if block_rows == KERNEL_ROWS && block_panels == KERNEL_PANELS {
                    block_vnni::<KERNEL_ROWS, KERNEL_PANELS>(layer, xq, sums, (t0, p0), None);
                } else {
                    block_vnni::<KERNEL_ROWS, KERNEL_PANELS>(
                        layer,
                        xq,
                        sums,
                        (t0, p0),
                        Some((block_rows, block_panels)),
                    );
                }
            }
            t0 += KERNEL_ROWS;
        }
        p0 += KERNEL_PANELS;
    }
}

/// One block of [`product_vnni`]: rows `t0..t0 + R`, panels `p0..p0 + P`, or the first
/// `edge = (rows, panels)` of them. Per quad of inputs: one load per panel, one broadcast per
/// row and one `vpdpbusd` per (row, panel), into `R × P` registers.
///
/// # Safety
/// As [`product_vnni`], with the block inside its `rows` × `panels`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
unsafe fn block_vnni<const R: usize, const P: usize>(
    layer: &QuantizedLinear,
    xq: &[u8],
    sums: &mut [i32],
    (t0, p0): (usize, usize),
    edge: Option<(usize, usize)>,
) {
    use std::arch::x86_64::{
        __m512i, _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_set1_epi32, _mm512_setzero_si512,
        _mm512_storeu_si512,
    };
    let (rows, panels) = edge.unwrap_or((R, P));
    let columns = layer.scale.len();
    let quads = layer.padded_inputs / QUAD;
    let weights = layer.packed.as_ptr();
    let inputs = xq.as_ptr();
    let mut acc = [[_mm512_setzero_si512(); P]; R];
    for quad in 0..quads {
        let mut w = [_mm512_setzero_si512(); P];
        for (p, w) in w.iter_mut().enumerate() {
            if edge.is_none() || p < panels {
                let at = ((p0 + p) * quads + quad) * PANEL * QUAD;
                // SAFETY: `at + 64 ≤ panels · quads · 64 = packed.len()`.
                *w = unsafe { _mm512_loadu_si512(weights.add(at).cast::<__m512i>()) };
            }
        }
        for (r, acc) in acc.iter_mut().enumerate() {
            if edge.is_some() && r >= rows {
                break;
            }
            let at = (t0 + r) * layer.padded_inputs + quad * QUAD;
            // SAFETY: `at + 4 ≤ rows · padded_inputs = xq.len()`.
            let x = _mm512_set1_epi32(unsafe { inputs.add(at).cast::<i32>().read_unaligned() });
            for (acc, w) in acc.iter_mut().zip(&w) {
                *acc = _mm512_dpbusd_epi32(*acc, x, *w);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate().take(rows) {
        for (p, acc) in acc.iter().enumerate().take(panels) {
            let at = (t0 + r) * columns + (p0 + p) * PANEL;
            // SAFETY: `at + 16 ≤ rows · columns = sums.len()`.
            unsafe { _mm512_storeu_si512(sums.as_mut_ptr().add(at).cast::<__m512i>(), *acc) };
        }
    }
}

/// Layer normalisation over the last dimension: `(x − mean) / sqrt(var + eps) · γ + β`.
struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    /// Normalises each row of `x` (`[rows, gamma.len()]`) in place.
    #[inline(always)]
    fn apply(&self, x: &mut [f32]) {
        let width = self.gamma.len();
        for row in x.chunks_exact_mut(width) {
            let mean = sum(row) / width as f32;
            let var = squared_deviations(row, mean) / width as f32;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

/// One encoder layer: self-attention (query, key and value fused into one product) and the
/// feed-forward block, each followed by a residual sum and a layer norm (post-LN BERT).
struct Layer {
    qkv: QuantizedLinear,
    attention_output: QuantizedLinear,
    attention_norm: LayerNorm,
    intermediate: QuantizedLinear,
    output: QuantizedLinear,
    output_norm: LayerNorm,
}

/// A BERT encoder with int8 linear layers (see the module documentation), for one unpadded
/// sequence of token ids at a time.
pub struct Int8Bert {
    /// `[vocab, hidden]`.
    word: Vec<f32>,
    /// `[max_positions, hidden]`.
    position: Vec<f32>,
    /// Token type 0's row, `[hidden]` (a single sentence has no other type).
    token_type: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    act: HiddenAct,
}

impl Int8Bert {
    /// Builds the encoder from the safetensors' tensors (any prefix before `embeddings.`, as
    /// `bert.` in some checkpoints) and the model's `config`.
    ///
    /// # Errors
    /// A tensor missing, of the wrong shape, a configuration whose heads do not divide the
    /// hidden size, or layers wider than 66,311 inputs.
    pub fn load(
        tensors: &HashMap<String, Tensor>,
        config: &Config,
    ) -> candle_core::Result<Int8Bert> {
        let prefix = tensors
            .keys()
            .find_map(|k| k.strip_suffix("embeddings.word_embeddings.weight"))
            .unwrap_or("")
            .to_string();
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            candle_core::bail!("num_attention_heads {heads} does not divide hidden_size {hidden}");
        }
        if hidden.max(config.intermediate_size) > MAX_INPUTS {
            candle_core::bail!("layers wider than {MAX_INPUTS} inputs overflow the int8 sums");
        }
        let get = |name: &str, shape: &[usize]| -> candle_core::Result<Vec<f32>> {
            let name = format!("{prefix}{name}");
            let t = tensors
                .get(&name)
                .ok_or_else(|| candle_core::Error::Msg(format!("tensor {name} is missing")))?;
            if t.dims() != shape {
                candle_core::bail!("tensor {name} has shape {:?}, expected {shape:?}", t.dims());
            }
            t.to_dtype(candle_core::DType::F32)?
                .flatten_all()?
                .to_vec1::<f32>()
        };
        let eps = config.layer_norm_eps as f32;
        let norm = |name: &str| -> candle_core::Result<LayerNorm> {
            Ok(LayerNorm {
                gamma: get(&format!("{name}.weight"), &[hidden])?,
                beta: get(&format!("{name}.bias"), &[hidden])?,
                eps,
            })
        };
        let linear = |names: &[&str], outputs: usize, inputs: usize| {
            let (mut weight, mut bias) = (Vec::new(), Vec::new());
            for name in names {
                weight.extend(get(&format!("{name}.weight"), &[outputs, inputs])?);
                bias.extend(get(&format!("{name}.bias"), &[outputs])?);
            }
            Ok::<_, candle_core::Error>(QuantizedLinear::new(
                &weight,
                &bias,
                outputs * names.len(),
                inputs,
            ))
        };
        let inter = config.intermediate_size;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = format!("encoder.layer.{i}");
                let attn = format!("{l}.attention.self");
                Ok(Layer {
                    qkv: linear(
                        &[
                            &format!("{attn}.query"),
                            &format!("{attn}.key"),
                            &format!("{attn}.value"),
                        ],
                        hidden,
                        hidden,
                    )?,
                    attention_output: linear(
                        &[&format!("{l}.attention.output.dense")],
                        hidden,
                        hidden,
                    )?,
                    attention_norm: norm(&format!("{l}.attention.output.LayerNorm"))?,
                    intermediate: linear(&[&format!("{l}.intermediate.dense")], inter, hidden)?,
                    output: linear(&[&format!("{l}.output.dense")], hidden, inter)?,
                    output_norm: norm(&format!("{l}.output.LayerNorm"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let token_types = get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, hidden],
        )?;
        Ok(Int8Bert {
            word: get(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hidden],
            )?,
            position: get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            token_type: token_types[..hidden].to_vec(),
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            hidden,
            heads,
            act: config.hidden_act,
        })
    }

    /// Width of a token state ([`Int8Bert::last_hidden_state`]'s rows).
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// The encoder's last hidden states of `ids` (`[CLS] … [SEP]`, at most the model's
    /// position count): `[ids.len(), hidden_size]` f32, row-major. Pooling them into a sentence
    /// vector is `pooling.rs`'s, as for the f32 engine.
    ///
    /// # Errors
    /// An id outside the vocabulary or more ids than positions (a tokenizer that does not
    /// belong to the weights; the model's own tokenizer and truncation rule out both).
    pub fn last_hidden_state(&self, ids: &[u32]) -> candle_core::Result<Vec<f32>> {
        let (vocab, positions) = (
            self.word.len() / self.hidden,
            self.position.len() / self.hidden,
        );
        if let Some(id) = ids.iter().find(|&&id| id as usize >= vocab) {
            candle_core::bail!("token id {id} is outside the vocabulary of {vocab} words");
        }
        if ids.len() > positions {
            candle_core::bail!("{} tokens exceed the {positions} positions", ids.len());
        }
        #[cfg(target_arch = "x86_64")]
        if supported() {
            // SAFETY: `encode_avx512` only requires the features detected just above.
            return Ok(unsafe { self.encode_avx512(ids) });
        }
        Ok(self.encode_portable(ids))
    }

    /// [`Int8Bert::last_hidden_state`] compiled for AVX-512: the f32 loops inlined below (quantisation,
    /// attention, GELU, layer norms) vectorise sixteen lanes wide.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW and VNNI.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
    unsafe fn encode_avx512(&self, ids: &[u32]) -> Vec<f32> {
        self.encode_portable(ids)
    }

    /// [`Int8Bert::last_hidden_state`] for the target's baseline instructions.
    #[inline(always)]
    fn encode_portable(&self, ids: &[u32]) -> Vec<f32> {
        let (tokens, hidden) = (ids.len(), self.hidden);
        let mut h = vec![0.0f32; tokens * hidden];
        for (t, &id) in ids.iter().enumerate() {
            let id = id as usize;
            let (word, position) = (
                &self.word[id * hidden..(id + 1) * hidden],
                &self.position[t * hidden..(t + 1) * hidden],
            );
            for (k, v) in h[t * hidden..(t + 1) * hidden].iter_mut().enumerate() {
                *v = word[k] + position[k] + self.token_type[k];
            }
        }
        self.embedding_norm.apply(&mut h);
        for layer in &self.layers {
            h = self.layer(layer, h, tokens);
        }
        h
    }

    /// One encoder layer over `h` (`[tokens, hidden]`).
    #[inline(always)]
    fn layer(&self, layer: &Layer, h: Vec<f32>, tokens: usize) -> Vec<f32> {
        let hidden = self.hidden;
        let qkv = layer.qkv.forward(&h, tokens);
        let context = self.attention(&qkv, tokens);
        let mut attended = layer.attention_output.forward(&context, tokens);
        for (a, x) in attended.iter_mut().zip(&h) {
            *a += x;
        }
        layer.attention_norm.apply(&mut attended);
        let mut inner = layer.intermediate.forward(&attended, tokens);
        self.activate(&mut inner);
        let mut out = layer.output.forward(&inner, tokens);
        debug_assert_eq!(out.len(), tokens * hidden);
        for (o, a) in out.iter_mut().zip(&attended) {
            *o += a;
        }
        layer.output_norm.apply(&mut out);
        out
    }

    /// Scaled dot-product attention per head (Vaswani et al., 2017): `softmax(q·kᵀ/√d)·v`,
    /// `qkv` being `[tokens, 3 · hidden]` (queries, keys, values side by side).
    #[inline(always)]
    fn attention(&self, qkv: &[f32], tokens: usize) -> Vec<f32> {
        let (hidden, stride) = (self.hidden, 3 * self.hidden);
        let d = hidden / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut context = vec![0.0f32; tokens * hidden];
        let mut scores = vec![0.0f32; tokens];
        // The head's keys transposed, `[d][tokens]`, so a query's scores against every key
        // are sixteen-lane multiply-adds rather than one short dot product per key.
        let mut keys = vec![0.0f32; d * tokens];
        for head in 0..self.heads {
            let (q0, k0, v0) = (head * d, hidden + head * d, 2 * hidden + head * d);
            for j in 0..tokens {
                for (c, &k) in qkv[j * stride + k0..][..d].iter().enumerate() {
                    keys[c * tokens + j] = k;
                }
            }
            for i in 0..tokens {
                let q = &qkv[i * stride + q0..][..d];
                // Sixteen keys at a time, their sums held in one register across the head's
                // dimensions.
                let (chunks, _) = scores.as_chunks_mut::<LANES>();
                for (j0, chunk) in chunks.iter_mut().enumerate() {
                    let mut lanes = [0.0f32; LANES];
                    for (c, &q) in q.iter().enumerate() {
                        let at = c * tokens + j0 * LANES;
                        for (l, &k) in lanes.iter_mut().zip(&keys[at..at + LANES]) {
                            *l += q * k;
                        }
                    }
                    for (s, l) in chunk.iter_mut().zip(&lanes) {
                        *s = l * scale;
                    }
                }
                for j in tokens / LANES * LANES..tokens {
                    let k = &qkv[j * stride + k0..][..d];
                    scores[j] = dot(q, k) * scale;
                }
                let max = max_of(&scores);
                let mut total = 0.0f32;
                for s in scores.iter_mut() {
                    *s = (*s - max).exp();
                    total += *s;
                }
                let inv = 1.0 / total;
                // Sixteen of the head's dimensions at a time, summed over the values in a
                // register.
                let out = &mut context[i * hidden + head * d..][..d];
                let (chunks, tail) = out.as_chunks_mut::<LANES>();
                for (c0, out) in chunks.iter_mut().enumerate() {
                    let mut lanes = [0.0f32; LANES];
                    for (j, &p) in scores.iter().enumerate() {
                        let at = j * stride + v0 + c0 * LANES;
                        for (l, &v) in lanes.iter_mut().zip(&qkv[at..at + LANES]) {
                            *l += p * v;
                        }
                    }
                    for (o, l) in out.iter_mut().zip(&lanes) {
                        *o = l * inv;
                    }
                }
                let done = d - tail.len();
                for (c, o) in tail.iter_mut().enumerate() {
                    let sum: f32 = scores
                        .iter()
                        .enumerate()
                        .map(|(j, p)| p * qkv[j * stride + v0 + done + c])
                        .sum();
                    *o = sum * inv;
                }
            }
        }
        context
    }

    /// The feed-forward activation in place: GELU with erf (Hendrycks & Gimpel, 2016), its
    /// tanh approximation, or ReLU, as the configuration names.
    #[inline(always)]
    fn activate(&self, x: &mut [f32]) {
        match self.act {
            HiddenAct::Gelu => {
                for v in x {
                    *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
                }
            }
            HiddenAct::GeluApproximate => {
                let c = (2.0 / std::f32::consts::PI).sqrt();
                for v in x {
                    *v = 0.5 * *v * (1.0 + (c * (*v + 0.044715 * *v * *v * *v)).tanh());
                }
            }
            HiddenAct::Relu => {
                for v in x {
                    *v = v.max(0.0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random matrix in [-1, 1).
    fn matrix(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    #[test]
    fn vnni_kernel_equals_the_portable_product_exactly() {
        if !supported() {
            return;
        }
        // Odd sizes: tails of rows, panels and inputs (not a multiple of 4).
        for (outputs, inputs, rows) in [(384, 384, 33), (1552, 386, 7), (20, 5, 1), (64, 8, 13)] {
            let layer = QuantizedLinear::new(
                &matrix(outputs * inputs, 1),
                &vec![0.0; outputs],
                outputs,
                inputs,
            );
            let xq: Vec<u8> = matrix(rows * layer.padded_inputs, 2)
                .iter()
                .map(|v| ((v + 1.0) * 127.5) as u8)
                .collect();
            let columns = layer.scale.len();
            let (mut fast, mut slow) = (vec![0; rows * columns], vec![0; rows * columns]);
            // SAFETY: detected above; lengths as `integer_product` asserts.
            unsafe { product_vnni(&layer, &xq, rows, &mut fast) };
            product_portable(&layer, &xq, rows, &mut slow);
            assert_eq!(fast, slow, "{outputs}×{inputs}, {rows} rows");
        }
    }

    /// Relative error of the quantised product against the f64 one: each factor is rounded to
    /// 255 levels, so the error is about 1/255 of the typical magnitude.
    const MAX_RELATIVE_ERROR: f64 = 0.02;

    #[test]
    fn quantized_linear_is_close_to_the_exact_product() {
        let (outputs, inputs, rows) = (50, 70, 9);
        let w = matrix(outputs * inputs, 3);
        let b = matrix(outputs, 4);
        let x = matrix(rows * inputs, 5);
        let y = QuantizedLinear::new(&w, &b, outputs, inputs).forward(&x, rows);
        let (mut err, mut total) = (0.0f64, 0.0f64);
        for t in 0..rows {
            for n in 0..outputs {
                let exact: f64 = (0..inputs)
                    .map(|k| f64::from(x[t * inputs + k]) * f64::from(w[n * inputs + k]))
                    .sum::<f64>()
                    + f64::from(b[n]);
                err += (exact - f64::from(y[t * outputs + n])).powi(2);
                total += exact * exact;
            }
        }
        let relative = (err / total).sqrt();
        assert!(relative < MAX_RELATIVE_ERROR, "relative error {relative}");
    }

    /// Largest difference allowed between [`erf`] and `libm::erff`: the approximation's own
    /// error is about 7e-8 (in f64); evaluating it in f32 adds a few units in the last place
    /// (measured 4.8e-7, near |erf| = 1 where one unit is 6e-8).
    const MAX_ERF_ERROR: f32 = 1e-6;

    #[test]
    fn erf_matches_libm() {
        let mut worst = 0.0f32;
        for i in -60_000..=60_000 {
            let x = i as f32 / 10_000.0;
            worst = worst.max((erf(x) - libm::erff(x)).abs());
        }
        assert!(worst <= MAX_ERF_ERROR, "largest error {worst}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(-3.0), -erf(3.0));
        assert!((erf(f32::INFINITY) - 1.0).abs() <= MAX_ERF_ERROR);
    }

    #[test]
    fn avx512_quantisation_gives_the_portable_bytes() {
        if !supported() {
            return;
        }
        // Ties (x.5 after scaling), both clamps, and a tail of 7 beyond two full lanes.
        let mut values = matrix(39, 7);
        values[0] = 0.5 / 2.0;
        values[1] = 1.5 / 2.0;
        values[2] = -3.0;
        values[3] = 200.0;
        let (mut fast, mut slow) = (vec![0u8; 39], vec![0u8; 39]);
        // SAFETY: detected above.
        unsafe { quantize_avx512(&values, 2.0, 10.0, &mut fast) };
        quantize_portable(&values, 2.0, 10.0, &mut slow);
        assert_eq!(fast, slow);
        assert_eq!((slow[0], slow[1], slow[2], slow[3]), (10, 12, 4, 255));
    }

    #[test]
    fn max_abs_and_dot_cover_the_tail() {
        let v: Vec<f32> = (0..37)
            .map(|i| if i == 36 { -9.0 } else { i as f32 / 10.0 })
            .collect();
        assert_eq!(min_max(&v), (-9.0, 3.5));
        assert_eq!(min_max(&[]), (0.0, 0.0));
        assert_eq!(min_max(&[2.0; 20]), (0.0, 2.0));
        assert_eq!(max_of(&v), 3.5);
        assert_eq!(max_of(&[-1.0; 17]), -1.0);
        let ones = vec![1.0f32; 37];
        let exact: f32 = v.iter().sum();
        assert!((dot(&v, &ones) - exact).abs() < 1e-4);
        let want: f32 = v.iter().map(|x| (x - 1.0) * (x - 1.0)).sum();
        assert!((squared_deviations(&v, 1.0) - want).abs() < 1e-3);
        assert!((sum(&v) - exact).abs() < 1e-4);
    }

    /// A one-layer encoder of hidden size 4 over 5 words and 3 positions, with pseudo-random
    /// weights.
    fn tiny_tensors() -> (HashMap<String, Tensor>, Config) {
        let config = Config {
            vocab_size: 5,
            hidden_size: 4,
            num_hidden_layers: 1,
            num_attention_heads: 2,
            intermediate_size: 8,
            max_position_embeddings: 3,
            type_vocab_size: 2,
            ..Config::default()
        };
        let mut tensors = HashMap::new();
        let mut add = |name: String, shape: &[usize]| {
            let len = shape.iter().product();
            let values = matrix(len, tensors.len() as u64 + 11);
            let t = Tensor::from_vec(values, shape, &candle_core::Device::Cpu).unwrap();
            tensors.insert(name, t);
        };
        for (name, shape) in [
            ("embeddings.word_embeddings", vec![5, 4]),
            ("embeddings.position_embeddings", vec![3, 4]),
            ("embeddings.token_type_embeddings", vec![2, 4]),
        ] {
            add(format!("bert.{name}.weight"), &shape);
        }
        let l = "bert.encoder.layer.0";
        for (name, outputs, inputs) in [
            ("attention.self.query", 4, 4),
            ("attention.self.key", 4, 4),
            ("attention.self.value", 4, 4),
            ("attention.output.dense", 4, 4),
            ("intermediate.dense", 8, 4),
            ("output.dense", 4, 8),
        ] {
            add(format!("{l}.{name}.weight"), &[outputs, inputs]);
            add(format!("{l}.{name}.bias"), &[outputs]);
        }
        for norm in [
            "bert.embeddings.LayerNorm".to_string(),
            format!("{l}.attention.output.LayerNorm"),
            format!("{l}.output.LayerNorm"),
        ] {
            add(format!("{norm}.weight"), &[4]);
            add(format!("{norm}.bias"), &[4]);
        }
        (tensors, config)
    }

    fn tiny_encoder() -> Int8Bert {
        let (tensors, config) = tiny_tensors();
        Int8Bert::load(&tensors, &config).unwrap()
    }

    /// The sentence vector of `ids`, as `Embedder` makes it.
    fn embed(model: &Int8Bert, ids: &[u32]) -> candle_core::Result<Vec<f32>> {
        let states = model.last_hidden_state(ids)?;
        crate::embedding::pooling::sentence_vector(states, ids.len(), model.hidden_size())
    }

    #[test]
    fn tiny_encoder_gives_unit_vectors_and_refuses_foreign_ids() {
        let model = tiny_encoder();
        assert_eq!(model.last_hidden_state(&[0, 4, 2]).unwrap().len(), 3 * 4);
        let v = embed(&model, &[0, 4, 2]).unwrap();
        assert_eq!(v.len(), 4);
        assert!((dot(&v, &v) - 1.0).abs() < 1e-5);
        assert_eq!(embed(&model, &[]).unwrap(), vec![0.0; 4]);
        let err = model.last_hidden_state(&[0, 5]).unwrap_err().to_string();
        assert!(
            err.contains("token id 5") && err.contains("5 words"),
            "{err}"
        );
        let err = model
            .last_hidden_state(&[0, 1, 2, 3])
            .unwrap_err()
            .to_string();
        assert!(err.contains("4 tokens exceed the 3 positions"), "{err}");
    }

    #[test]
    fn load_names_a_missing_or_misshapen_tensor() {
        let model = tiny_encoder();
        assert_eq!((model.hidden, model.heads, model.layers.len()), (4, 2, 1));
        let load_error = |tensors: &HashMap<String, Tensor>, config: &Config| {
            Int8Bert::load(tensors, config).err().unwrap().to_string()
        };
        let (mut tensors, mut config) = tiny_tensors();
        let key = "bert.encoder.layer.0.output.dense.weight";
        let wrong = Tensor::zeros((4, 7), candle_core::DType::F32, &candle_core::Device::Cpu);
        let right = tensors.insert(key.into(), wrong.unwrap()).unwrap();
        let err = load_error(&tensors, &config);
        assert!(err.contains(key) && err.contains("[4, 7]"), "{err}");
        tensors.remove(key);
        let err = load_error(&tensors, &config);
        assert!(err.contains(key) && err.contains("is missing"), "{err}");
        tensors.insert(key.into(), right);
        config.num_attention_heads = 3;
        let err = load_error(&tensors, &config);
        assert!(err.contains("num_attention_heads 3"), "{err}");
    }

    #[test]
    fn zero_rows_and_zero_weights_give_the_bias() {
        let layer = QuantizedLinear::new(&[0.0; 8], &[1.5, -2.0], 2, 4);
        assert_eq!(layer.forward(&[0.0; 4], 1), vec![1.5, -2.0]);
        assert_eq!(layer.forward(&[], 0), Vec::<f32>::new());
    }
}
