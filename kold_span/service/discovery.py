"""The discovery document of Perspective's API (`commentanalyzer`, `v1alpha1`), pointing at this service.

Google's API clients build their methods from a discovery document (a JSON description of the routes,
parameters and schemas). `GET /$discovery/rest?version=v1alpha1` answers one whose `rootUrl` is this
service's own base URL, so `googleapiclient.discovery.build("commentanalyzer", "v1alpha1",
discoveryServiceUrl=".../$discovery/rest?version={apiVersion}", developerKey=KEY)` sends
`comments().analyze(body=...)` and `comments().suggestscore(body=...)` here with no other change.
The document is written here from the routes this service has; the schemas list the fields each route
reads (docs/SERVICE.md), with `spanScores` offsets in UTF-16 code units, as Perspective counts them.

Example:
    >>> doc = discovery_document("http://127.0.0.1:8080/")
    >>> doc["rootUrl"], sorted(doc["resources"]["comments"]["methods"])
    ('http://127.0.0.1:8080/', ['analyze', 'suggestscore'])
"""
from __future__ import annotations

from typing import Any

NAME, VERSION = "commentanalyzer", "v1alpha1"


def _object(properties: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"type": "object", "description": description, "properties": properties}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": name}


def _map_of(name: str) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": _ref(name)}


def _schemas() -> dict[str, Any]:
    """The request and response schemas of the two methods, as this service reads and answers them."""
    string, number, boolean = {"type": "string"}, {"type": "number", "format": "float"}, {"type": "boolean"}
    offset = {"type": "integer", "format": "int32",
              "description": "end-exclusive offset into the comment's text, in UTF-16 code units"}
    strings = {"type": "array", "items": string}
    schemas = {
        "TextEntry": _object({"text": string, "type": string}),
        "Context": _object({"entries": {"type": "array", "items": _ref("TextEntry")}}),
        "AttributeParameters": _object({"scoreType": string, "scoreThreshold": number}),
        "Score": _object({"value": number, "type": string}),
        "SpanScore": _object({"begin": offset, "end": offset, "score": _ref("Score")}),
        "AttributeScores": _object({"summaryScore": _ref("Score"),
                                    "spanScores": {"type": "array", "items": _ref("SpanScore")}}),
        "AnalyzeCommentRequest": _object({
            "comment": _ref("TextEntry"), "context": _ref("Context"),
            "requestedAttributes": _map_of("AttributeParameters"), "spanAnnotations": boolean,
            "languages": strings, "doNotStore": boolean, "clientToken": string, "sessionId": string,
            "communityId": string}),
        "AnalyzeCommentResponse": _object({"attributeScores": _map_of("AttributeScores"), "languages": strings,
                                           "detectedLanguages": strings, "clientToken": string}),
        "SuggestCommentScoreRequest": _object({
            "comment": _ref("TextEntry"), "context": _ref("Context"), "attributeScores": _map_of("AttributeScores"),
            "languages": strings, "communityId": string, "clientToken": string, "sessionId": string}),
        "SuggestCommentScoreResponse": _object({"clientToken": string}),
    }
    for name, schema in schemas.items():
        schema["id"] = name
    return schemas


def _method(name: str, request: str, response: str) -> dict[str, Any]:
    return {"id": f"{NAME}.comments.{name}", "path": f"{VERSION}/comments:{name}",
            "flatPath": f"{VERSION}/comments:{name}", "httpMethod": "POST", "parameters": {}, "parameterOrder": [],
            "request": _ref(request), "response": _ref(response)}


def discovery_document(root_url: str) -> dict[str, Any]:
    """The discovery document with `root_url` (ending in `/`) as the service's address."""
    query = {"type": "string", "location": "query"}
    return {
        "kind": "discovery#restDescription", "discoveryVersion": "v1", "id": f"{NAME}:{VERSION}", "name": NAME,
        "version": VERSION, "title": "kold-span (Perspective's comment analyzer API)", "protocol": "rest",
        "rootUrl": root_url, "servicePath": "", "baseUrl": root_url, "batchPath": "batch",
        "parameters": {"key": {**query, "description": "the API key (--api-keys)"},
                       "alt": {**query, "default": "json", "enum": ["json"]}, "fields": query,
                       "prettyPrint": {"type": "boolean", "location": "query"}},
        "schemas": _schemas(),
        "resources": {"comments": {"methods": {
            "analyze": _method("analyze", "AnalyzeCommentRequest", "AnalyzeCommentResponse"),
            "suggestscore": _method("suggestscore", "SuggestCommentScoreRequest", "SuggestCommentScoreResponse")}}},
    }
