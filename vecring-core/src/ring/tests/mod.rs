//! The ring's unit tests: one conformance suite, written once and generic
//! over the storage. Each case takes a [`NewRing`] that makes a zeroed ring
//! of a geometry, and [`ring_suite!`](ring_suite) makes a `#[test]` of
//! every case for one storage: for the heap below, and for a ring of a
//! memfd region in `memory`'s tests (a layer above the ring, which the
//! ring does not import).

use super::{Consumer, Producer, RingStorage};
use crate::abi::SlotDesc;
use crate::geometry::Geometry;
use crate::sync::Ordering;

/// `n` rounds of a long randomized case, or a tenth of them under Miri,
/// which runs a thousand times slower: each case still wraps the ring many
/// times in every way it tests.
pub(crate) fn rounds(n: usize) -> usize {
    if cfg!(miri) {
        n / 10
    } else {
        n
    }
}

pub(crate) mod basic;
pub(crate) mod batch;
pub(crate) mod corruption;
pub(crate) mod edges;
pub(crate) mod hold_back;
pub(crate) mod in_place;
pub(crate) mod keep;
pub(crate) mod small;

/// Makes a zeroed ring of a geometry, for a case of the suite.
pub(crate) type NewRing<S> = fn(Geometry) -> S;

/// Makes a `#[test]` of every case of the suite, run on the rings that
/// `$new` (a [`NewRing`]) makes. Every case is listed here: a case left out
/// is dead code, which the lint gate refuses.
macro_rules! ring_suite {
    ($new:expr) => {
        $crate::ring::tests::ring_suite!(@cases $new;
            basic::empty_ring_reports_empty,
            basic::full_ring_refuses_then_recovers,
            basic::wraps_around_many_times,
            basic::every_size_class_up_to_jumbo,
            basic::absurd_lengths_are_refused_without_overflow,
            basic::bad_lengths_are_refused,
            basic::small_buffer_leaves_frame_queued,
            basic::batch_larger_than_free_space_sends_what_fits,
            basic::send_batch_refreshes_a_stale_view_before_reporting_full,
            basic::recv_batch_stops_at_a_frame_that_does_not_fit,
            basic::send_batch_stops_at_a_bad_frame_after_the_first,
            basic::multi_slot_frames_are_contiguous_unless_they_wrap,
            basic::uncommitted_chunk_publishes_nothing,
            basic::endpoints_and_chunks_can_move_to_another_thread,
            batch::send_batch_streams_small_frames_and_stops_where_it_must,
            batch::streamed_bursts_arrive_intact_across_the_wrap,
            batch::push_run_writes_every_frame_across_the_wrap_and_stops_at_the_reservation,
            batch::push_run_refuses_bad_lengths_without_calling_fill,
            batch::frames_validated_but_not_handed_out_stay_queued,
            batch::runs_and_frames_read_every_frame_in_order_across_the_wrap,
            batch::into_arrays_refuses_a_frame_that_wraps_whatever_its_first_part,
            batch::recv_batch_groups_equal_frames_across_the_wrap,
            batch::recv_batch_streams_equal_large_frames_to_the_head_and_across_the_wrap,
            batch::recv_batch_group_stops_at_a_buffer_too_small,
            corruption::descriptors_scribbled_on_while_free_are_rewritten,
            corruption::consumer_detects_each_kind_of_corruption,
            corruption::recv_waits_for_this_laps_stamp_on_a_descriptor_like_the_last,
            corruption::consumer_never_reads_the_producers_index,
            corruption::a_frame_past_the_rings_capacity_is_truncated,
            corruption::a_frame_found_published_then_taken_back_is_truncated,
            batch::a_chunk_reads_frames_published_after_it_was_made,
            corruption::recv_batch_delivers_the_frames_before_a_corrupt_one_then_stops,
            corruption::a_corrupt_frame_ends_the_chunk_and_stays_reported,
            corruption::a_chunk_ready_reports_a_corrupt_first_descriptor,
            corruption::a_corrupt_descriptor_ends_a_run_and_is_reported_at_its_frame,
            corruption::recv_batch_group_catches_a_corrupt_descriptor_inside_it,
            corruption::producer_detects_tail_corruption_and_stays_poisoned,
            corruption::producer_attach_refuses_corrupt_indices,
            edges::a_frame_of_exactly_one_slot_carries_no_more_flag,
            edges::the_largest_frame_fits_and_one_byte_more_does_not,
            edges::a_peer_frame_of_the_largest_length_and_one_byte_more,
            edges::diagnose_passes_a_valid_frame_that_ready_exactly_covers,
            edges::producer_reports_its_geometry_counters_and_corruption,
            edges::unread_frames_counts_from_a_plausible_tail_only,
            edges::unread_frames_never_exceeds_the_frames_published,
            edges::write_chunk_counts_frames_and_free_slots_to_the_last,
            edges::appends_across_the_wrap_stop_at_the_frame_end,
            edges::recv_batch_groups_end_at_the_last_buffer_and_at_the_head,
            hold_back::hold_back_is_off_by_default,
            hold_back::hold_back_holds_a_few_frames_until_the_wait_is_over,
            hold_back::hold_back_leaves_frames_of_several_slots_alone,
            hold_back::hold_back_never_holds_recv,
            in_place::frames_runs_and_arrays_report_their_place_and_size,
            keep::kept_frames_hold_their_slots_until_released,
            edges::slot_at_maps_the_slot_data_only,
            keep::reads_that_find_nothing_leave_kept_frames_kept,
            small::push_small_stops_where_push_must_take_over_and_loses_nothing,
        );
    };
    (@cases $new:expr; $($topic:ident::$case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::ring::tests::$topic::$case($new);
            }
        )+
    };
}
pub(crate) use ring_suite;

/// The suite on the heap backend.
mod heap {
    super::ring_suite!(crate::ring::HeapRing::new);
}

/// A producer and consumer over a fresh ring.
fn channel<S: RingStorage + Clone>(
    new: NewRing<S>,
    geometry: Geometry,
) -> (Producer<S>, Consumer<S>) {
    let (_, tx, rx) = corruptible_channel(new, geometry);
    (tx, rx)
}

fn geometry(slot_count: u32, slot_size: u32) -> Geometry {
    Geometry::new(slot_count, slot_size).unwrap()
}

fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A channel whose ring the test keeps, to corrupt it as a hostile peer
/// would.
fn corruptible_channel<S: RingStorage + Clone>(
    new: NewRing<S>,
    geometry: Geometry,
) -> (S, Producer<S>, Consumer<S>) {
    let ring = new(geometry);
    // SAFETY: the ring is new; these are its only producer and consumer
    // (the test only corrupts it, as a peer would).
    let (tx, rx) = unsafe {
        (
            Producer::attach(ring.clone()).unwrap(),
            Consumer::attach(ring.clone()).unwrap(),
        )
    };
    (ring, tx, rx)
}

/// Rewrites the length and flags of `slot`'s descriptor as a peer could,
/// keeping its stamp (published or not, as it was).
fn set_desc<S: RingStorage>(ring: &S, slot: usize, len: u16, flags: u16) {
    let desc = &ring.descs()[slot].0;
    let stamp = desc.load(Ordering::Relaxed) & crate::abi::DESC_STAMP_MASK;
    desc.store(SlotDesc::pack(len, flags) | stamp, Ordering::Relaxed);
}

/// Writes the descriptor of free-running `index` as a peer publishing a
/// frame there would: length, flags and the stamp of `index`'s lap.
fn forge_desc<S: RingStorage>(ring: &S, index: u64, len: u16, flags: u16) {
    let g = ring.geometry();
    let stamp = SlotDesc::stamp(index, g.slot_count().trailing_zeros());
    ring.descs()[g.slot_of(index)]
        .0
        .store(SlotDesc::pack(len, flags) | stamp, Ordering::Release);
}
