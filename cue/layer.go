package cue

import "path/filepath"

// Layer names where a config file sits in the precedence order.
type Layer string

// The layers, lowest precedence first. LayerDefault holds the built-in
// defaults; LayerFile is a file given to `voltmcp vet FILE`.
const (
	LayerDefault       Layer = "default"
	LayerUserShared    Layer = "user-shared"
	LayerUser          Layer = "user"
	LayerProjectShared Layer = "project-shared"
	LayerProject       Layer = "project"
	LayerFile          Layer = "file"
)

// Layers lists the four discovered layers, lowest precedence first.
var layerOrder = [...]Layer{LayerUserShared, LayerUser, LayerProjectShared, LayerProject}

func (l Layer) rank() int {
	switch l {
	case LayerDefault:
		return 0
	case LayerUserShared:
		return 1
	case LayerUser:
		return 2
	case LayerProjectShared:
		return 3
	case LayerProject:
		return 4
	case LayerFile:
		return 5
	}
	return 6
}

// IsProject reports whether the layer comes from the project and so needs
// project trust to load.
func (l Layer) IsProject() bool { return l == LayerProjectShared || l == LayerProject }

// scope groups layers whose servers merge field by field.
func (l Layer) scope() string {
	if l.IsProject() {
		return "project"
	}
	if l == LayerDefault {
		return "default"
	}
	return "user"
}

// VoltmcpOwned reports whether voltmcp may write the layer's file.
func (l Layer) VoltmcpOwned() bool { return l == LayerUser || l == LayerProject }

// Locations are the roots the four layers are found under.
type Locations struct {
	// Home is the root of the user layers, normally $HOME.
	Home string
	// Project is the root of the project layers, normally the working
	// directory.
	Project string
}

// Path returns the file of a layer under these locations, or "" for a
// layer that has no file.
func (l Locations) Path(layer Layer) string {
	switch layer {
	case LayerUserShared:
		return filepath.Join(l.Home, ".config", "mcp", "mcp.json")
	case LayerUser:
		return filepath.Join(l.Home, ".volt", "agent", "mcp.json")
	case LayerProjectShared:
		return filepath.Join(l.Project, ".mcp.json")
	case LayerProject:
		return filepath.Join(l.Project, ".volt", "mcp.json")
	}
	return ""
}
