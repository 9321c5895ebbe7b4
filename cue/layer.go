package cue

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

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

// LockFile returns the lock file that voltmcp's writers hold while they
// edit the config file at path, a layer or another client's file:
// <Home>/.volt/agent/locks/HASH.lock, HASH naming path's absolute form.
// It is in the directory of the user layer, which every voltmcp of this
// home writes whatever its --agent-dir, so every writer of one file
// names the same lock and none is left beside a file of the project or
// of another client.
func (l Locations) LockFile(path string) string {
	return filepath.Join(l.Home, ".volt", "agent", "locks", pathKey(path)+".lock")
}

// BackupFile returns where voltmcp keeps the copy of another client's
// config file it makes before it first changes it:
// <Home>/.volt/agent/backups/NAME.HASH, NAME being the file's name
// without a leading dot and HASH naming its absolute path, so that each
// file has one backup and none is left beside it.
func (l Locations) BackupFile(path string) string {
	name := strings.TrimPrefix(filepath.Base(path), ".")
	return filepath.Join(l.Home, ".volt", "agent", "backups", name+"."+pathKey(path)[:16])
}

// pathKey is the hex SHA-256 of path's absolute, clean form.
func pathKey(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:])
}
