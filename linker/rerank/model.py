"""The LATTE network (Zhu et al. 2020, section 3) over frozen token states.

Shapes: B mentions, C candidates each, m mention tokens, n candidate tokens, h transformer width, d = 2·hidden.

- Encoder (eq. 1): a projection of the token states (plus a flag embedding on the mention side: query,
  mention-in-context or context) into an encoder shared by mention and candidate -> u^p [B, m, d],
  u^c [B·C, n, d]. The paper's BiLSTM (``encoder="bilstm"``, the GPU setting) or, the CPU default, a
  width-3 convolution with a residual (``"conv"``): the token states are already contextual (they come
  from the transformer), and on 2 CPU cores the BiLSTM over ten candidates per mention took 9 in 10 of
  the training time.
- Cross-attention (eqs. 2-4, BiDAF): s_ij = w_a·[u^c_i; u^p_j; u^c_i ⊙ u^p_j]; each mention token attends over
  the candidate tokens (a^α_j), the candidate attends back over the mention (a^β, BiDAF's query-to-context
  vector); x_j = [u^p_j; a^α_j; u^p_j ⊙ a^α_j; u^p_j ⊙ a^β].
- f (eq. 5): masked max- and mean-pooling of x over the mention tokens (the paper concatenates a fixed-length
  X; pooling admits any length) -> a feed-forward net. The paper's ReLU on f is left out: a clipped score
  stops the ranking gradient for every candidate it clips.
- Latent types (eq. 6): v = W_l·pool(u) + b_l with W_l shared by mention and candidate, softmax over K
  types; g = cos(softmax(v^p), softmax(v^c)).
- Known types (eq. 7): a ReLU layer over v -> one logit per known type, for mention and candidate alike.
- Ranking (eq. 8): r = w_f·f + w_g·g + w_s·features, the features being the retriever's own scores for the
  candidate (its score, dense and sparse parts, exact match, the concept prior, ...), which the paper's
  candidate generator left implicit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from linker.rerank.states import N_FLAGS

__all__ = ["LatteConfig", "LatteModel", "LatteOutput", "N_RETRIEVER_FEATURES"]

N_RETRIEVER_FEATURES = 8
INVERSE_RANK_FEATURE = 5  # linker.rerank.features.FEATURE_NAMES.index("inverse_rank")


@dataclass(frozen=True)
class LatteConfig:
    input_dim: int = 384
    hidden: int = 128  # per LSTM direction (the paper: 512 with 300-d GloVe + 512-d char-CNN inputs)
    lstm_layers: int = 1  # the paper: 2
    encoder: str = "conv"  # "bilstm" (the paper) or "conv" (the CPU default, see the module docstring)
    latent_types: int = 2048  # K, the paper's value
    known_types: int = 0  # set from the dictionary's known types; 0: no known-type classifier
    dropout: float = 0.1
    use_match: bool = True  # f (ablation: g only)
    use_latent: bool = True  # g (ablation: f only)
    use_features: bool = True  # the retriever's scores as features

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class LatteOutput:
    score: torch.Tensor  # r [B, C]
    match: torch.Tensor  # f [B, C]
    type_similarity: torch.Tensor  # g [B, C]
    mention_latent: torch.Tensor  # softmax(v^p) [B, K]
    candidate_latent: torch.Tensor  # softmax(v^c) [B, C, K]
    mention_known_logits: torch.Tensor | None  # [B, T]
    candidate_known_logits: torch.Tensor | None  # [B, C, T]


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp(min=1.0)


def _masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return x.masked_fill(~mask.unsqueeze(-1), -1e4).max(1).values


class LatteModel(nn.Module):
    def __init__(self, config: LatteConfig) -> None:
        super().__init__()
        self.config = config
        h, d = config.hidden, 2 * config.hidden
        self.project = nn.Sequential(nn.Linear(config.input_dim, h), nn.Dropout(config.dropout))
        self.flags = nn.Embedding(N_FLAGS, h)
        if config.encoder == "bilstm":
            self.encoder: nn.Module = nn.LSTM(h, h, num_layers=config.lstm_layers, batch_first=True, bidirectional=True)
        elif config.encoder == "conv":
            self.encoder = nn.Conv1d(h, d, kernel_size=3, padding=1)
            self.widen = nn.Linear(h, d, bias=False)
        else:
            raise ValueError(f"encoder must be 'bilstm' or 'conv', not {config.encoder!r}")
        self.attention = nn.Linear(3 * d, 1, bias=False)  # w_a, split below for memory
        self.match = nn.Sequential(nn.Linear(8 * d, d), nn.ReLU(), nn.Dropout(config.dropout), nn.Linear(d, 1))
        self.latent = nn.Linear(2 * d, config.latent_types)  # W_l, b_l (shared by mention and candidate)
        self.known = (nn.Sequential(nn.ReLU(), nn.Linear(config.latent_types, config.known_types))
                      if config.known_types > 0 else None)
        # Start from the retriever's own ranking (the inverse-rank feature alone, f and g weighted 0) and learn
        # what improves on it: initialised at random, the network first unlearned the retriever (NCBI dev
        # Acc@1 0.84 after one epoch against the retriever's 0.90) and never quite recovered.
        self.features = nn.Linear(N_RETRIEVER_FEATURES, 1)
        self.w_f = nn.Parameter(torch.tensor(0.0))
        self.w_g = nn.Parameter(torch.tensor(0.0))
        self.rank_as_retriever()

    def rank_as_retriever(self) -> None:
        """Set the scoring layer to the retriever's own order (the inverse-rank feature alone, f and g weighted
        0), leaving the encoders and the type heads as they are."""
        with torch.no_grad():
            self.features.weight.zero_()
            self.features.bias.zero_()
            self.features.weight[0, INVERSE_RANK_FEATURE] = 2.0
            self.w_f.zero_()
            self.w_g.zero_()

    def keeps_retriever_order(self) -> bool:
        """Whether r orders the candidates as the retriever did: f and g weighted 0 (or switched off) and, of the
        retriever's features, only the inverse rank weighted (positively), as :meth:`rank_as_retriever` leaves it
        when no trained epoch ranked the held-out documents better."""
        with torch.no_grad():
            weights = self.features.weight[0].clone()
            by_rank = float(weights[INVERSE_RANK_FEATURE])
            weights[INVERSE_RANK_FEATURE] = 0.0
            return (self.config.use_features and by_rank > 0 and bool((weights == 0).all())
                    and (not self.config.use_match or float(self.w_f) == 0.0)
                    and (not self.config.use_latent or float(self.w_g) == 0.0))

    def reads_match(self) -> bool:
        """Whether r depends on f: f switched on and weighted (a model that keeps the retriever's order weights it 0)."""
        return self.config.use_match and float(self.w_f.detach()) != 0.0

    def encode(self, states: torch.Tensor, mask: torch.Tensor, flags: torch.Tensor) -> torch.Tensor:
        x = self.project(states) + self.flags(flags)
        if self.config.encoder == "conv":
            x = x * mask.unsqueeze(-1).to(x.dtype)
            conv = self.encoder(x.transpose(1, 2)).transpose(1, 2)
            return self.widen(x) + nn.functional.gelu(conv)
        lengths = mask.sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.encoder(packed)
        u, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return u

    def latent_logits(self, u: torch.Tensor, mask: torch.Tensor, focus: torch.Tensor) -> torch.Tensor:
        """v = W_l·[mean over the focus tokens (the mention); mean over all tokens] + b_l."""
        return self.latent(torch.cat([_masked_mean(u, focus & mask), _masked_mean(u, mask)], dim=-1))

    def known_logits(self, v: torch.Tensor) -> torch.Tensor | None:
        return self.known(v) if self.known is not None else None

    def forward(self, mention: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                candidates: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                features: torch.Tensor) -> LatteOutput:
        """``mention``: states [B, m, h], mask, flags; ``candidates``: states [B·C, n, h], mask, flags;
        ``features``: the retriever's features [B, C, F]."""
        c_states, c_mask, c_flags = candidates
        b, c = features.shape[0], features.shape[1]
        up, p_mask, vp = self._mention(mention)
        uc = self.encode(c_states, c_mask, c_flags)  # [B·C, n, d]
        vc = self.candidate_latent_logits(_masked_mean(uc, c_mask)).view(b, c, -1)  # [B, C, K]
        if self.config.use_match:
            f = self._match(up.repeat_interleave(c, dim=0), p_mask.repeat_interleave(c, dim=0), uc, c_mask).view(b, c)
        else:
            f = torch.zeros(b, c)
        return self._output(f, vp, vc, features)

    def pooled_names(self, states: torch.Tensor, mask: torch.Tensor, flags: torch.Tensor) -> torch.Tensor:
        """Each name's pooled encoding [N, d] (the mean of its encoded tokens): what the name's latent and known
        types are read from (:meth:`candidate_latent_logits`); it depends on the name alone."""
        return _masked_mean(self.encode(states, mask, flags), mask)

    def candidate_latent_logits(self, pooled: torch.Tensor) -> torch.Tensor:
        """v^c from a name's pooled encoding: :meth:`latent_logits` with the whole name as its focus."""
        return self.latent(torch.cat([pooled, pooled], dim=-1))

    def types_only(self, mention: tuple[torch.Tensor, torch.Tensor, torch.Tensor], pooled: torch.Tensor,
                   features: torch.Tensor) -> LatteOutput:
        """As :meth:`forward` for a model whose ranking does not read f (:meth:`reads_match`), the candidates given
        by their names' pooled encodings [B, C, d] (:meth:`pooled_names`): no candidate token passes through the
        encoder or the cross-attention, and f is NaN."""
        if self.reads_match():
            raise ValueError("this model's ranking reads f (w_f is not 0): score it with forward()")
        _, _, vp = self._mention(mention)
        return self._output(None, vp, self.candidate_latent_logits(pooled), features)

    def _mention(self, mention: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The mention's encoded tokens u^p [B, m, d], its mask and its latent logits v^p [B, K]."""
        p_states, p_mask, p_flags = mention
        up = self.encode(p_states, p_mask, p_flags)
        focus = (p_flags > 0) & (p_flags <= 2)  # query and mention tokens
        return up, p_mask, self.latent_logits(up, p_mask, focus)

    def _output(self, f: torch.Tensor | None, vp: torch.Tensor, vc: torch.Tensor, features: torch.Tensor) -> LatteOutput:
        """g, r and the known-type logits from f [B, C] (None: not computed, NaN in the output, not in r) and the
        latent logits v^p [B, K], v^c [B, C, K]."""
        lp, lc = vp.softmax(-1), vc.softmax(-1)
        g = nn.functional.cosine_similarity(lp.unsqueeze(1), lc, dim=-1)  # [B, C]
        score = torch.zeros_like(g)
        if f is None:
            f = torch.full_like(g, float("nan"))
        elif self.config.use_match:
            score = score + self.w_f * f
        if self.config.use_latent:
            score = score + self.w_g * g
        if self.config.use_features:
            score = score + self.features(features).squeeze(-1)
        return LatteOutput(score, f, g, lp, lc, self.known_logits(vp), self.known_logits(vc))

    def _match(self, up: torch.Tensor, p_mask: torch.Tensor, uc: torch.Tensor, c_mask: torch.Tensor) -> torch.Tensor:
        d = up.shape[-1]
        w = self.attention.weight.view(3, d)
        # s_ij = w1·u^c_i + w2·u^p_j + (w3 ⊙ u^c_i)·u^p_j, computed without the [n, m, 3d] tensor.
        s = (uc @ w[0]).unsqueeze(2) + (up @ w[1]).unsqueeze(1) + torch.einsum("bid,bjd->bij", uc * w[2], up)
        s = s.masked_fill(~c_mask.unsqueeze(2), -1e4)  # [N, n, m]
        alpha = s.softmax(dim=1)  # over candidate tokens, for each mention token
        a_alpha = torch.einsum("bij,bid->bjd", alpha, uc)  # [N, m, d]
        best = s.max(dim=1).values.masked_fill(~p_mask, -1e4)  # [N, m]
        beta = best.softmax(dim=1)
        a_beta = torch.einsum("bj,bjd->bd", beta, up).unsqueeze(1)  # [N, 1, d]
        x = torch.cat([up, a_alpha, up * a_alpha, up * a_beta], dim=-1)  # [N, m, 4d]
        pooled = torch.cat([_masked_max(x, p_mask), _masked_mean(x, p_mask)], dim=-1)
        return self.match(pooled).squeeze(-1)
