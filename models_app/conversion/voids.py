"""Which openings ifcopenshell subtracts from which product, and the modelling precision it subtracts them within:
what openings.cut needs from the IFC, read the way ifcopenshell reads it."""

from __future__ import annotations

DEFAULT_PRECISION = 1e-5  # metres: ifcopenshell's "precision" setting, for a model whose contexts give none
FINEST_PRECISION = 1e-7  # ifcopenshell never models finer than this, whatever a context says


def openings_of(product) -> list:
    """The openings ifcopenshell subtracts from a product: its own, and those of every element it is an aggregated
    part of (walking up while the product decomposes exactly one whole, by IfcRelAggregates), e.g. a wall's openings
    for its layer parts. In IFC2X3 Decomposes also holds IfcRelNests, which ends the walk as it does ifcopenshell's."""
    found = []
    if product.is_a("IfcElement") and not product.is_a("IfcFeatureElementSubtraction"):
        found += [rel.RelatedOpeningElement for rel in product.HasOpenings]
    whole = product
    while True:
        decomposes = getattr(whole, "Decomposes", None) or ()
        if len(decomposes) != 1 or not decomposes[0].is_a("IfcRelAggregates"):
            return found
        whole = decomposes[0].RelatingObject
        if whole.is_a("IfcElement") and not whole.is_a("IfcFeatureElementSubtraction"):
            found += [rel.RelatedOpeningElement for rel in whole.HasOpenings]


def subtractions(ifc) -> dict[int, list]:
    """Product id -> the openings ifcopenshell subtracts from it (see openings_of), for each product that has any:
    found from the voiding relations down through aggregation, without visiting every product."""
    candidates = {}
    pending = [rel.RelatingBuildingElement for rel in ifc.by_type("IfcRelVoidsElement")]
    while pending:
        product = pending.pop()
        if product.id() not in candidates:
            candidates[product.id()] = product
            pending += [part for rel in product.IsDecomposedBy if rel.is_a("IfcRelAggregates") for part in rel.RelatedObjects]
    return {key: openings for key, product in candidates.items() if (openings := openings_of(product))}


def modelling_precision(ifc) -> float:
    """The precision (metres) ifcopenshell's booleans work within on this model: the finest Precision its
    geometric representation contexts give, in the model's length unit, but no finer than FINEST_PRECISION."""
    import ifcopenshell.util.unit

    given = [context.Precision for context in ifc.by_type("IfcGeometricRepresentationContext", include_subtypes=False)
             if context.Precision]
    if not given:
        return DEFAULT_PRECISION
    return max(FINEST_PRECISION, min(given) * ifcopenshell.util.unit.calculate_unit_scale(ifc))
