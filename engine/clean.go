package engine

// serverInfoMaxChars caps the short serverInfo fields a server reports of
// itself (name, version, protocol version); its title is capped like a
// tool's.
const serverInfoMaxChars = 128

// progressMaxChars caps a progress notification's message.
const progressMaxChars = 1024
