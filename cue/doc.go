package cue
