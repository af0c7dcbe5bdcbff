"""The request and response bodies of POST /api/link (:mod:`webapp.api.views.link_text`): a text, the spans to
link (or none: the dictionary matcher finds them), and each mention's ranked candidates with the types behind them."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

__all__ = ["SpanInputSerializer", "LinkRequestSerializer", "LatentTypeSerializer", "PredictedTypeSerializer",
           "CandidateSerializer", "LinkedMentionSerializer", "LinkResponseSerializer"]


class SpanInputSerializer(serializers.Serializer):
    start = serializers.IntegerField(min_value=0)
    end = serializers.IntegerField(min_value=1)
    mention_type = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError("end must be greater than start")
        return attrs


class LinkRequestSerializer(serializers.Serializer):
    dictionary = serializers.SlugField(help_text="The dictionary whose active index links the text.")
    text = serializers.CharField(max_length=100_000, trim_whitespace=False)
    mentions = SpanInputSerializer(
        many=True, required=False, max_length=2000,
        help_text="Spans to link; left out, mentions are found by matching the dictionary's names.",
    )
    k = serializers.IntegerField(min_value=1, max_value=50, default=10, help_text="Candidates per mention part.")
    types = serializers.BooleanField(
        default=True,
        help_text="The LATTE re-ranker's types (predicted, latent, conflicts). false: where the re-ranker only types "
        "(it kept the retriever's order) its pass is skipped, about a third of a request's time; a re-ranker that "
        "re-orders still ranks.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        bad = {i: f"span {m['start']}-{m['end']} is outside the text (length {len(attrs['text'])})"
               for i, m in enumerate(attrs.get("mentions") or []) if m["end"] > len(attrs["text"])}
        if bad:
            raise serializers.ValidationError({"mentions": bad})
        return attrs


class LatentTypeSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The latent type's number in the re-ranker (0 to K-1).")
    label = serializers.CharField(help_text="Its first three typical names.")
    typical_names = serializers.ListField(child=serializers.CharField(),
                                          help_text="The dictionary names most typical of it, computed at training.")
    probability = serializers.FloatField()


class PredictedTypeSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="A known type of the dictionary (e.g. a MEDIC slim).")
    probability = serializers.FloatField()


class CandidateSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    part = serializers.IntegerField()
    concept_id = serializers.CharField()
    preferred_name = serializers.CharField(allow_blank=True)
    matched_name = serializers.CharField()
    score = serializers.FloatField()
    dense = serializers.FloatField(allow_null=True)
    sparse = serializers.FloatField(allow_null=True)
    known_types = serializers.ListField(child=serializers.CharField())
    latent_type = LatentTypeSerializer(allow_null=True, help_text="The candidate's most likely latent type (a LATTE re-ranker's).")
    type_conflict = serializers.BooleanField(help_text="Its known types do not meet the mention's predicted ones.")
    homonyms = serializers.ListField(child=serializers.CharField(),
                                     help_text="Other concepts owning the matched name: choosing is a convention.")


class LinkedMentionSerializer(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    text = serializers.CharField()
    mention_type = serializers.CharField(allow_blank=True)
    source = serializers.ChoiceField(choices=["given", "detected"])
    ranked_by = serializers.ChoiceField(choices=["retriever", "latte"],
                                        help_text="Who ordered the candidates: the retriever or the LATTE re-ranker.")
    predicted_types = PredictedTypeSerializer(many=True, help_text="The mention's known types as the re-ranker predicts them, best first.")
    latent_type = LatentTypeSerializer(allow_null=True)
    confidence = serializers.FloatField(allow_null=True, help_text="Calibrated probability that the top-1 is right (null: not calibrated).")
    nil = serializers.BooleanField(allow_null=True, help_text="The confidence is below the index's no-concept threshold.")
    candidates = CandidateSerializer(many=True)


class LinkResponseSerializer(serializers.Serializer):
    dictionary = serializers.CharField()
    release = serializers.CharField()
    model_version = serializers.CharField()
    index_version = serializers.IntegerField()
    mentions = LinkedMentionSerializer(many=True)
