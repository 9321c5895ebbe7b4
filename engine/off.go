package engine

import (
	"fmt"

	"github.com/voltmcp/voltmcp/cue"
)

// TurnedOff reports why the gateway is turned off, or "" when it is on.
// It is off when the effective config says settings.enabled: false; the
// reason names the file (and layer) the value came from and how to turn
// the gateway back on. While it is off, `voltmcp serve` exposes no tool
// and says why in its instructions, no eager or keep-alive server
// starts, and [Engine.Gateway] refuses every action but status with that
// reason.
func (e *Engine) TurnedOff() string {
	if p := e.off.Load(); p != nil {
		return *p
	}
	return ""
}

// setOff records what cfg says of [Engine.TurnedOff]; it is called
// wherever e.cfg is set.
func (e *Engine) setOff(cfg *cue.Config) {
	if cfg == nil || cfg.Settings.Enabled {
		e.off.Store(nil)
		return
	}
	r := offReason(cfg)
	e.off.Store(&r)
}

// offReason says why cfg turns the gateway off, naming where
// settings.enabled: false is written when the config knows it.
func offReason(cfg *cue.Config) string {
	where := "the config it was given"
	if o, ok := cfg.Sources["settings.enabled"]; ok && o.File != "" {
		where = fmt.Sprintf("%s (the %s layer, line %d)", o.File, o.Layer, o.Line)
	}
	return fmt.Sprintf("voltmcp is turned off by settings.enabled: false in %s; set it to true, or remove it, to turn it on", where)
}
