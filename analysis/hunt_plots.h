// SPDX-License-Identifier: Apache-2.0
// The figures of a hunt (docs/design/workflows.md#hunts) as inline SVG, for its
// report and the coordinator's page: the pairwise survey as a worker x
// worker heat map, and each worker's median ratio to the fleet median as a
// dot plot. Both stay readable from a handful of workers to several
// hundred, and mark every element a test or a reader needs to find, so a
// figure can be checked by counting.
//
// Worker names come from users: every name, verdict and error is escaped.
// Labels show a worker's id without "workers/" (cut to 24 characters);
// tooltips and data attributes carry the whole name.
//
// Pure functions; no state.
#ifndef COLLBENCH_ANALYSIS_HUNT_PLOTS_H_
#define COLLBENCH_ANALYSIS_HUNT_PLOTS_H_

#include <string>

#include "collbench/v1/hunt.pb.h"

namespace collbench {

// The survey's pairwise measurements as one <svg class="plot hunt-heatmap">.
//
// Cells: the survey's pair measurements (phase "pairwise", or a topology
// hunt's "within", "across" and "random") with two distinct workers.
// Re-tests (phase "retest") are not drawn: they measure suspects against
// peers chosen as healthy, not the fleet, and the suspects' verdicts say
// what they found. A pair measured more than once is drawn from its median
// successful measurement by ratio (the lower middle of an even count), or
// its last one when all failed. The matrix is symmetric: a pair is two
// cells, (a, b) and (b, a), each a
//   <rect class="cell" data-a="A" data-b="B" data-ratio="0.93" ...>
//     <title>A ↔ B: 1.23 GB/s, 0.93 of median</title></rect>
// coloured by ratio (red at 0, yellow at 0.75, green at 1, dark green at
// 1.25 and above). A failed run's cells are dark and carry
// data-failed="true" and no data-ratio; the title gives the error. A pair
// not measured, and the diagonal, are left grey (no cell). Cells come in
// row order: row by row, then column by column. Above 60 workers the cells
// carry no tooltip of their own and only the lower triangle is drawn (one
// cell per pair, (a, b) with a's row below b's): each row is a
// <g class="row" data-worker="W"> whose tooltip names its worker, and the
// cells keep their data attributes. A page for 250 workers stays a few MB.
//
// Order of rows (and columns): the suspects first, in the order of
// hunt.suspects() (each once), then every other worker of a pairwise
// measurement by its median ratio in hunt.workers(), ascending, ties by
// name; one missing from hunt.workers() comes last. A suspect with no
// pairwise measurement still has its (grey) row.
//
// When workers have racks (HuntWorker.rack), rows go rack by rack, in the
// order above within each rack: first the racks a RACK_SUSPECT names, then
// those holding a suspect, then by name, the workers of no known rack last
// ("no rack"). Each rack is a <g class="rack" data-rack="R"> (with
// data-suspect="true" for a RACK_SUSPECT, drawn red): its block on the
// diagonal outlined, a line between it and the rack above across the
// matrix, and its name ("rack R") right of its rows. Above 400 workers the
// rows are not grouped (see below).
//
// Each suspect has a <g class="suspect" data-worker="W"> with its verdict
// as tooltip, outlining its row and column and marking them in red. Labels
// are <text class="worker-label" data-worker="W">: up to 60 workers, one
// per row and per column (the suspects' in red); above that only the
// suspects' rows are labelled, with leader lines. Cells shrink as workers
// grow: at most 28 px, the matrix at most 720 px a side, but a cell at
// least 2 px. Below the matrix a legend: the colour scale with ticks 0,
// 0.25, ..., 1.25 and the grey and dark swatches.
//
// Above 400 workers only the first 400 of that order are drawn (the
// suspects and the slowest), with the pairs among them; the title says so.
//
// "" when the hunt has no pairwise measurement (a groups or ring hunt).
std::string HuntHeatMapSvg(const v1::HuntOutput& hunt);

// Whether any of the hunt's workers has a rack (the heat map then groups
// its rows by rack, and the tables show the racks).
bool HuntHasRacks(const v1::HuntOutput& hunt);

// hunt.workers() as one <svg class="plot hunt-distribution">: a dot per
// worker at its median ratio on a linear x axis from 0 to at least 1.25
// (past the largest ratio), one row per worker, the slowest at the top
// (ties by name), with a line at 1.0 labelled "fleet median".
//
// Each worker is a <circle class="worker" data-worker="W" data-ratio="0.62">
// with its ratio, z-score, measurements and slow ones as tooltip, in that
// order: red for a suspect, amber for a worker with slow measurements,
// blue otherwise, hollow when it had no successful measurement. Each
// suspect among them also has a <g class="suspect" data-worker="W"> (a red
// ring, its verdict as tooltip). Up to 40 workers, rows are 14 px and every
// worker is labelled on the left; above that the rows share a 280 px strip
// and only the suspects and the 5 slowest are labelled
// (<text class="worker-label" data-worker="W">), beside their dots.
//
// "" when the hunt has no workers.
std::string HuntDistributionSvg(const v1::HuntOutput& hunt);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_HUNT_PLOTS_H_
