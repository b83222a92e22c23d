// Anchors the shared LibTorch precompiled header; holds no code.
