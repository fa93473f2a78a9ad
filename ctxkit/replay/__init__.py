"""Replay: every model call of a conversation rebuilt, compared the way the provider's cache does.

Input: a loaded fixture and options. Output: `driver.Replay`, one row per call with its cache
prediction, break, cause and cost. Stages: `calls` (which calls, as derived fixtures), `items`
(a payload as the provider reads it), `cache` (provider rules), `breaks` (cause of a miss),
`cost` (prices), `driver` (the loop).
"""
