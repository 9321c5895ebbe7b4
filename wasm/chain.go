package wasm

import (
	"context"
	"errors"
	"fmt"
)

// Chain runs plugin modules in order. Its zero value has no modules: it
// classifies every tool as unknown and shapes by the hard cap alone. A
// Chain is safe for concurrent use as long as its fields do not change.
type Chain struct {
	// Classifiers are asked in order; modules that do not export classify
	// are skipped.
	Classifiers []*Module
	// Shapers run in order, each on the previous one's output; modules
	// that do not export shape are skipped.
	Shapers []*Module
}

// Classify asks each classifier in order and returns the first answer that
// is not unknown, so an earlier module can defer to a later one by saying
// unknown. A classifier that faults is skipped. When no classifier knows,
// the result is unknown, with the last unknown reason or, when every
// classifier faulted, the faults as reason. Classify never fails; the
// result's Faulted says whether a fault shaped it.
func (c *Chain) Classify(ctx context.Context, in ClassifyInput) Classification {
	res := Classification{Risk: RiskUnknown, Reason: "no classifier"}
	var faults []string
	answered := false
	for _, m := range c.Classifiers {
		if m == nil || !m.CanClassify() {
			continue
		}
		got, err := m.Classify(ctx, in)
		if err != nil {
			faults = append(faults, faultSummary(m, err))
			continue
		}
		if got.Risk != RiskUnknown {
			got.Faulted = len(faults) > 0
			return got
		}
		res, answered = got, true
	}
	if !answered && len(faults) > 0 {
		res.Reason = cleanText(joinNotes(faults), MaxReasonBytes, false)
	}
	res.Faulted = len(faults) > 0
	return res
}

// ShapeInputFactor bounds what Chain.Shape hands to shapers: text beyond
// this many times in.Limits is cut first, since the cap would drop it
// anyway. It keeps shaping time bounded, so padding a result cannot push a
// shaper past its deadline and the text past the shaper.
const ShapeInputFactor = 4

// Shape runs each shaper in order on the previous one's output and then
// applies Cap with in.Limits, whatever the shapers returned. Before the
// shapers, text is cut to ShapeInputFactor times the limits. A shaper that
// faults is skipped with a note, and the next one gets the content it
// would have had. Shape never fails.
func (c *Chain) Shape(ctx context.Context, in ShapeInput) Shaped {
	var notes []string
	content, cut := Cap(in.Content, Limits{MaxBytes: in.Limits.MaxBytes * ShapeInputFactor, MaxLines: in.Limits.MaxLines * ShapeInputFactor})
	if cut {
		notes = append(notes, fmt.Sprintf("cut the input to %d times the output cap before shaping", ShapeInputFactor))
	}
	for _, m := range c.Shapers {
		if m == nil || !m.CanShape() {
			continue
		}
		step := in
		step.Content = content
		got, err := m.Shape(ctx, step)
		if err != nil {
			notes = append(notes, "skipped shaper "+faultSummary(m, err))
			continue
		}
		content = got.Content
		notes = append(notes, got.Notes...)
	}
	content, cut = Cap(content, in.Limits)
	if cut {
		notes = append(notes, fmt.Sprintf("cut to the output cap (%s)", describeLimits(in.Limits)))
	}
	return Shaped{Content: content, Notes: notes}
}

// faultSummary is "name: kind" for a fault, or "name: error" otherwise.
func faultSummary(m *Module, err error) string {
	var f *Fault
	if errors.As(err, &f) {
		return m.Name() + " " + string(f.Kind)
	}
	return m.Name() + ": " + err.Error()
}

func describeLimits(l Limits) string {
	switch {
	case l.MaxBytes > 0 && l.MaxLines > 0:
		return fmt.Sprintf("%d bytes, %d lines", l.MaxBytes, l.MaxLines)
	case l.MaxBytes > 0:
		return fmt.Sprintf("%d bytes", l.MaxBytes)
	}
	return fmt.Sprintf("%d lines", l.MaxLines)
}

func joinNotes(s []string) string {
	out := "plugin fault: "
	for i, n := range s {
		if i > 0 {
			out += "; "
		}
		out += n
	}
	return out
}
