// Package cbfalgebra implements counting Bloom filters (CBFs) with the full
// algebra of "Counting Bloom Filter Algebra Operations": complement,
// intersection, subtraction, union and symmetric difference (xor) of
// homologous filters, the order relations between them, the false-positive
// theory of every result, plain Bloom filters over the same hash families,
// and a checksummed binary wire format.
//
// # Filters
//
// A [CBF] has m counters of r bits (r = 4 by default, 8 and 16 also) and k
// hash functions drawn from a [HashFamily]:
//
//   - [HashFast] (the default) hashes the element once with the seeded
//     128-bit XXH3 and derives the k addresses by double hashing,
//     g_j = h1 + j*h2 (mod 2^64), address_j = floor(g_j * m / 2^64).
//     Any m works.
//   - [HashSHA1] is the paper's scheme exactly: m must be a power of two,
//     A = log2 m, and the bit string SHA1(x) || SHA1(x||x) || ... (x
//     concatenated q times, q = 1..T, T = ceil(k*A/160)) is cut into
//     A-bit addresses, address j (from 0) being the A bits starting at bit
//     j*A, most significant bit first. With seed 0 this is the paper
//     bit-for-bit; a non-zero seed is prefixed, as 8 big-endian bytes, to
//     every SHA-1 input (SHA1(seed || x^q)).
//
// When two of an element's addresses coincide, that counter moves twice on
// insert and on delete (and must show at least 2 for a delete to succeed).
//
// Two filters are homologous when their [Params] (m, k, r, hash family and
// seed) are equal; every binary operation between filters that are not
// returns [ErrNotHomologous].
//
// # The algebra
//
// With U the universe (CBF(U) built from every element, e.g. every block of
// a file) the operations are, counter by counter:
//
//	Complement(U, S)    U_i - S_i
//	Intersect(A, B)     min(A_i, B_i)
//	Subtract(A, B, U)   min(A_i, U_i - B_i)
//	Union(A, B, U)      A_i + min(B_i, U_i - A_i)
//	Xor(A, B, U)        min(A_i, U_i - B_i) + min(B_i, U_i - A_i)
//	Equal, LessEq       A_i == B_i, A_i <= B_i for every i
//
// Every result is again a CBF of its set: it has no false negatives and
// supports deleting that set's elements. [SubtractInto] and the other
// ...Into variants write into an existing filter without allocating (dst
// may be one of the operands); they are the hot paths of reconciliation.
// The operations work on whole 64-bit words (16, 8 or 4 counters at a time)
// with SWAR arithmetic.
//
// # Saturation
//
// A counter at its maximum 2^r-1 is saturated and means "unknown": the true
// count reached the maximum at some point and may have moved since. The rules:
//
//   - Insert and Delete leave a saturated counter saturated.
//   - Delete treats a saturated counter as holding enough.
//   - In U_i - B_i: if U_i is saturated the difference is unknown
//     (saturated); else if B_i is saturated the difference is at most U_i
//     and U_i is used; otherwise U_i - B_i clamped at 0 (only inconsistent
//     inputs, B not a subset of U, reach the clamp).
//   - min treats a saturated counter as the value 2^r-1, so min(sat, x) = x
//     (an upper bound of the true minimum).
//   - Sums (Union, Xor) saturate at 2^r-1.
//
// Each result counter is therefore either exact, an upper bound of the exact
// algebra value, or saturated; since the exact algebra never has false
// negatives (theorems T4-T13), neither do the results, even for tiny m and
// heavy load. Equal and LessEq compare stored counter values.
//
// # Len of results
//
// For a filter built by inserts and deletes, Len is the number of elements
// inserted minus deleted. A result of the algebra has Len = round(sum of
// counters / k), which is the exact set size whenever the result is exactly
// the CBF of its set (T2, T8) and an estimate otherwise.
//
// # Wire format
//
// CBFs and Bloom filters encode (all integers little-endian) as a 36-byte
// header — magic "RCBF" or "RBLF", format version 1, hash family, r (1 for
// Bloom filters), a zero byte, m (uint64), k (uint32), seed (uint64), n
// (uint64) — then the counters packed r bits each into ceil(m*r/64) 64-bit
// words (counter i in word i/(64/r) at bit (i mod 64/r)*r), then the CRC-32C
// (Castagnoli) of all preceding bytes. Decoders check every field, the exact
// length, the zero padding and the checksum, never allocate more than the
// bytes present and the caller's limit allow, and return [ErrCorrupt] or
// [ErrTooLarge] rather than panicking.
//
// # Theory
//
// [FP] and FPComplement, FPIntersect, FPSubtract, FPUnion, FPXor give the
// expected false-positive rate of a filter and of each algebra result;
// DoubleFPIntersect and its siblings give (fp, fn) of the "double-CBF" way
// of answering the same queries from the two original filters.
package cbfalgebra
