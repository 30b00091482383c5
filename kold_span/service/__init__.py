"""Layer 8, service: `kold-span serve`, a trained model behind HTTP (above inference, beside training).

`app` (the app assembled), `settings` (what `serve` configures, each field an option), `lifecycle`
(load, warm up, drain), `admission` (room, body size, the batcher), `handlers` (refusals as JSON),
`routes`, `model` (the predictor as the batcher uses it), `batching` (the bounded queue and the
thread that cuts batches by tokens and wait), `requests` (bodies → examples, each refusal naming its
field), `attributes` (Perspective's attributes as tasks and labels), `keys` (API keys, rates,
quotas), `feedback` (moderators' suggestions as training data),
`middleware` (request ids, header limits, hosts, access log), `prometheus` (the metrics), `server`
(uvicorn, connection guards, SIGTERM), `static/` (the web page and the API page).
"""
